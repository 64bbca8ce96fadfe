// The Kubernetes client against the real local control plane: CRUD on core objects and a CRD, patch
// flavours, optimistic concurrency, watch ordering, 410 Gone → relist, watch resumption, RBAC denial,
// and token-file rotation.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "base/status_test_macros.h"
#include "kube/api_error.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/leader_election.h"
#include "kube/workqueue.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::kube {
namespace {

using ringmaster::testing::TestCluster;
using ringmaster::testing::UniqueName;
using ringmaster::testing::WaitFor;
using std::chrono::milliseconds;
using std::chrono::seconds;

json ConfigMap(const std::string& ns, const std::string& name, json data = json::object(),
               json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
          {"data", data}};
}

// Compacts etcd's history up to its current revision (what the apiserver does every 5 minutes), so
// that resourceVersions older than now are truly gone.
Status CompactEtcd(const TestCluster& cluster) {
  const std::string url = cluster.Get("ETCD_URL");
  if (url.empty()) return FailedPreconditionError("cluster.env has no ETCD_URL");
  auto post = [&](const std::string& path, const std::string& body) -> StatusOr<json> {
    RINGMASTER_ASSIGN_OR_RETURN(
        ringmaster::testing::CommandResult r,
        ringmaster::testing::RunCommand({"curl", "-sS", "-X", "POST", url + path, "-d", body}, seconds(30)));
    if (!r.ok()) return UnknownError("curl " + path + ": " + r.err);
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return DataLossError("etcd answered " + r.out);
    return j;
  };
  RINGMASTER_ASSIGN_OR_RETURN(json range, post("/v3/kv/range", R"({"key":"AA=="})"));
  std::string rev = range["header"].value("revision", "");
  if (rev.empty()) return DataLossError("no revision in " + range.dump());
  RINGMASTER_ASSIGN_OR_RETURN(json compacted,
                              post("/v3/kv/compaction", R"({"revision":")" + rev + R"(","physical":true})"));
  if (compacted.contains("error") || compacted.contains("code")) {
    // "required revision has been compacted" means someone compacted at least this far already: fine.
    if (compacted.dump().find("compacted") == std::string::npos)
      return UnknownError("etcd compaction: " + compacted.dump());
  }
  return Status::Ok();
}

// A CRD name suffix unique to this process and call (CRD deletion is slow, so names are not reused
// even under --gtest_repeat).
std::string CrdSuffix(const std::string& tag) {
  static std::atomic<int> counter{0};
  return std::to_string(::getpid()) + tag + std::to_string(counter++);
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = TestCluster::FromEnvironment();
    ASSERT_OK(cluster) << cluster.status();
    cluster_ = std::move(cluster).value();
    auto cfg = LoadConfig(cluster_.kubeconfig(), "", ProcessEnvironment());
    ASSERT_OK(cfg) << cfg.status();
    config_ = *cfg;
    auto client = NewClient(config_);
    ASSERT_OK(client) << client.status();
    client_ = *client;
    ns_ = UniqueName("kube");
    auto created = client_->Create(resources::Namespaces(), "",
                                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}});
    ASSERT_OK(created) << created.status();
  }

  void TearDown() override {
    for (const auto& crd : crds_) (void)client_->Delete(resources::CustomResourceDefinitions(), "", crd);
    if (client_) {
      DeleteOptions o;
      o.propagation_policy = "Background";
      (void)client_->Delete(resources::Namespaces(), "", ns_, o);
    }
  }

  // A client authenticated only by `token` (no client certificate).
  std::shared_ptr<Client> ClientWithToken(const std::string& token, const std::string& token_file = "") {
    ClientConfig c = config_;
    c.client_cert_pem.clear();
    c.client_key_pem.clear();
    c.bearer_token = token;
    c.bearer_token_file = token_file;
    auto client = NewClient(c);
    EXPECT_OK(client) << client.status();
    return client.ok() ? *client : nullptr;
  }

  std::string TokenFor(const std::string& sa) {
    auto created = client_->Create(resources::ServiceAccounts(), ns_,
                                   {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", sa}}}});
    EXPECT_OK(created) << created.status();
    TokenRequestOptions o;
    o.expiration_seconds = 600;
    auto token = client_->CreateToken(ns_, sa, o);
    EXPECT_OK(token) << token.status();
    return token.ok() ? *token : "";
  }

  // Creates a namespaced CRD "<plural>.kubetest.ringmaster.io" with status and scale subresources and
  // waits until it is served; it is deleted in TearDown.
  GroupVersionResource CreateWidgetCrd(const std::string& suffix) {
    const std::string group = "kubetest.ringmaster.io";
    const std::string plural = "widgets" + suffix;
    json crd = {
        {"apiVersion", "apiextensions.k8s.io/v1"},
        {"kind", "CustomResourceDefinition"},
        {"metadata", {{"name", plural + "." + group}}},
        {"spec",
         {{"group", group},
          {"scope", "Namespaced"},
          {"names", {{"plural", plural}, {"singular", "widget" + suffix}, {"kind", "Widget" + suffix}}},
          {"versions",
           json::array(
               {{{"name", "v1"},
                 {"served", true},
                 {"storage", true},
                 {"subresources",
                  {{"status", json::object()},
                   {"scale", {{"specReplicasPath", ".spec.replicas"}, {"statusReplicasPath", ".status.replicas"}}}}},
                 {"schema",
                  {{"openAPIV3Schema",
                    {{"type", "object"},
                     {"properties",
                      {{"spec",
                        {{"type", "object"}, {"properties", {{"replicas", {{"type", "integer"}, {"minimum", 0}}}}}}},
                       {"status",
                        {{"type", "object"},
                         {"properties",
                          {{"replicas", {{"type", "integer"}}}, {"phase", {{"type", "string"}}}}}}}}}}}}}}})}}}};
    auto created = client_->Create(resources::CustomResourceDefinitions(), "", crd);
    EXPECT_OK(created) << created.status();
    crds_.push_back(plural + "." + group);
    GroupVersionResource gvr{group, "v1", plural, true};
    Status served = WaitFor("the CRD to be served", seconds(30), [&](std::string* last) {
      ListOptions from_cache;
      from_cache.resource_version = "0";
      auto l = client_->List(gvr, ns_, from_cache);
      *last = l.status().ToString();
      return l.ok();
    });
    EXPECT_OK(served) << served;
    return gvr;
  }

  static json Widget(const std::string& suffix, const std::string& name, int replicas) {
    return {{"apiVersion", "kubetest.ringmaster.io/v1"},
            {"kind", "Widget" + suffix},
            {"metadata", {{"name", name}}},
            {"spec", {{"replicas", replicas}}}};
  }

  TestCluster cluster_;
  std::vector<std::string> crds_;
  ClientConfig config_;
  std::shared_ptr<Client> client_;
  std::string ns_;
};

TEST_F(KubeClientTest, CrudOnConfigMapsWithEveryPatchFlavour) {
  auto gvr = resources::ConfigMaps();
  auto created = client_->Create(gvr, ns_, ConfigMap(ns_, "cm", {{"a", "1"}}, {{"app", "x"}}));
  ASSERT_OK(created) << created.status();
  EXPECT_FALSE(UidOf(*created).empty());

  auto dup = client_->Create(gvr, ns_, ConfigMap(ns_, "cm"));
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status();
  auto dup_err = ApiErrorFromStatus(dup.status());
  ASSERT_TRUE(dup_err.has_value());
  EXPECT_EQ(dup_err->http_code, 409);
  EXPECT_EQ(dup_err->reason, "AlreadyExists");

  auto got = client_->Get(gvr, ns_, "cm");
  ASSERT_OK(got) << got.status();
  EXPECT_EQ((*got)["data"]["a"], "1");

  json updated_obj = *got;
  updated_obj["data"]["b"] = "2";
  auto updated = client_->Update(gvr, ns_, updated_obj);
  ASSERT_OK(updated) << updated.status();
  EXPECT_EQ((*updated)["data"]["b"], "2");

  auto merged = client_->Patch(gvr, ns_, "cm", PatchType::kMerge, {{"data", {{"c", "3"}, {"a", nullptr}}}});
  ASSERT_OK(merged) << merged.status();
  EXPECT_FALSE((*merged)["data"].contains("a"));
  EXPECT_EQ((*merged)["data"]["c"], "3");

  auto jsonpatch = client_->Patch(gvr, ns_, "cm", PatchType::kJson,
                                  json::array({{{"op", "replace"}, {"path", "/data/c"}, {"value", "33"}}}));
  ASSERT_OK(jsonpatch) << jsonpatch.status();
  EXPECT_EQ((*jsonpatch)["data"]["c"], "33");

  auto bad_patch = client_->Patch(gvr, ns_, "cm", PatchType::kJson,
                                  json::array({{{"op", "test"}, {"path", "/data/c"}, {"value", "nope"}}}));
  EXPECT_FALSE(bad_patch.ok());

  auto applied = client_->Apply(gvr, ns_, ConfigMap(ns_, "applied", {{"k", "v"}}), "ringmaster-test");
  ASSERT_OK(applied) << applied.status();
  bool managed = false;
  for (const auto& mf : (*applied)["metadata"]["managedFields"])
    managed |= mf.value("manager", "") == "ringmaster-test";
  EXPECT_TRUE(managed) << (*applied)["metadata"].dump();
  // A second manager changing the same field conflicts unless it forces.
  auto conflict = client_->Apply(gvr, ns_, ConfigMap(ns_, "applied", {{"k", "other"}}), "someone-else");
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict) << conflict.status();
  auto forced = client_->Apply(gvr, ns_, ConfigMap(ns_, "applied", {{"k", "other"}}), "someone-else", /*force=*/true);
  ASSERT_OK(forced) << forced.status();
  EXPECT_EQ((*forced)["data"]["k"], "other");

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(client_->Delete(gvr, ns_, "cm", wrong_uid).code(), StatusCode::kConflict);
  DeleteOptions right;
  right.precondition_uid = UidOf(*created);
  right.propagation_policy = "Foreground";
  ASSERT_OK(client_->Delete(gvr, ns_, "cm", right));
  Status gone = WaitFor("cm to be deleted", seconds(10), [&](std::string* last) {
    auto g = client_->Get(gvr, ns_, "cm");
    *last = g.status().ToString();
    return g.status().code() == StatusCode::kNotFound;
  });
  EXPECT_OK(gone) << gone;
  auto missing = client_->Get(gvr, ns_, "cm");
  auto err = ApiErrorFromStatus(missing.status());
  ASSERT_TRUE(err.has_value()) << missing.status();
  EXPECT_EQ(err->http_code, 404);
  EXPECT_EQ(err->reason, "NotFound");
  EXPECT_EQ(client_->Delete(gvr, ns_, "cm").code(), StatusCode::kNotFound);
}

TEST_F(KubeClientTest, ListWithSelectorsAndPagination) {
  auto gvr = resources::ConfigMaps();
  for (int i = 0; i < 7; ++i) {
    auto c = client_->Create(gvr, ns_,
                             ConfigMap(ns_, "page-" + std::to_string(i), {}, {{"parity", i % 2 ? "odd" : "even"}}));
    ASSERT_OK(c) << c.status();
  }
  ListOptions page;
  page.label_selector = "parity in (odd,even)";
  page.limit = 3;
  auto first = client_->List(gvr, ns_, page);
  ASSERT_OK(first) << first.status();
  EXPECT_EQ((*first)["items"].size(), 3u);
  EXPECT_FALSE((*first)["metadata"].value("continue", "").empty());
  auto all = client_->ListAll(gvr, ns_, page);
  ASSERT_OK(all) << all.status();
  EXPECT_EQ((*all)["items"].size(), 7u);
  EXPECT_FALSE((*all)["metadata"].value("resourceVersion", "").empty());
  ListOptions odd;
  odd.label_selector = "parity=odd";
  auto odds = client_->List(gvr, ns_, odd);
  ASSERT_OK(odds);
  EXPECT_EQ((*odds)["items"].size(), 3u);
  ListOptions by_name;
  by_name.field_selector = "metadata.name=page-4";
  auto one = client_->List(gvr, ns_, by_name);
  ASSERT_OK(one) << one.status();
  ASSERT_EQ((*one)["items"].size(), 1u);
  EXPECT_EQ(NameOf((*one)["items"][0]), "page-4");
  ListOptions bad;
  bad.label_selector = "===";
  EXPECT_EQ(client_->List(gvr, ns_, bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KubeClientTest, StaleResourceVersionOnUpdateIsConflict) {
  auto gvr = resources::ConfigMaps();
  auto created = client_->Create(gvr, ns_, ConfigMap(ns_, "occ", {{"v", "0"}}));
  ASSERT_OK(created) << created.status();
  json a = *created, b = *created;
  a["data"]["v"] = "a";
  ASSERT_OK(client_->Update(gvr, ns_, a));
  b["data"]["v"] = "b";
  auto stale = client_->Update(gvr, ns_, b);
  ASSERT_EQ(stale.status().code(), StatusCode::kConflict) << stale.status();
  auto e = ApiErrorFromStatus(stale.status());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_code, 409);
  EXPECT_EQ(e->reason, "Conflict");
}

TEST_F(KubeClientTest, CustomResourceWithStatusAndScaleSubresources) {
  const std::string suffix = CrdSuffix("a");
  GroupVersionResource gvr = CreateWidgetCrd(suffix);
  json widget = Widget(suffix, "w", 2);
  auto w = client_->Create(gvr, ns_, widget);
  ASSERT_OK(w) << w.status();
  json invalid = widget;
  invalid["metadata"]["name"] = "bad";
  invalid["spec"]["replicas"] = -1;
  auto rejected = client_->Create(gvr, ns_, invalid);
  EXPECT_EQ(rejected.status().code(), StatusCode::kInvalidArgument) << rejected.status();
  EXPECT_EQ(ApiErrorFromStatus(rejected.status())->http_code, 422);

  // The status subresource ignores spec changes and the main resource ignores status changes.
  json with_status = *w;
  with_status["status"] = {{"replicas", 2}, {"phase", "Running"}};
  with_status["spec"]["replicas"] = 9;
  auto st = client_->UpdateStatus(gvr, ns_, with_status);
  ASSERT_OK(st) << st.status();
  EXPECT_EQ((*st)["status"]["phase"], "Running");
  EXPECT_EQ((*st)["spec"]["replicas"], 2);

  auto scale = client_->GetScale(gvr, ns_, "w");
  ASSERT_OK(scale) << scale.status();
  EXPECT_EQ((*scale)["kind"], "Scale");
  EXPECT_EQ((*scale)["spec"]["replicas"], 2);
  EXPECT_EQ((*scale)["status"]["replicas"], 2);
  auto scaled = client_->UpdateScale(gvr, ns_, "w", 5);
  ASSERT_OK(scaled) << scaled.status();
  auto after = client_->Get(gvr, ns_, "w");
  ASSERT_OK(after);
  EXPECT_EQ((*after)["spec"]["replicas"], 5);
  ASSERT_OK(client_->Delete(gvr, ns_, "w"));
}

TEST_F(KubeClientTest, WatchSeesAddUpdateDeleteInOrder) {
  auto gvr = resources::ConfigMaps();
  auto list = client_->List(gvr, ns_);
  ASSERT_OK(list) << list.status();
  WatchOptions wo;
  wo.resource_version = (*list)["metadata"]["resourceVersion"];
  wo.timeout_seconds = 30;
  auto watch = client_->Watch(gvr, ns_, wo);
  ASSERT_OK(watch) << watch.status();
  ASSERT_OK(client_->Create(gvr, ns_, ConfigMap(ns_, "w1")));
  ASSERT_OK(client_->Patch(gvr, ns_, "w1", PatchType::kMerge, {{"data", {{"x", "1"}}}}));
  ASSERT_OK(client_->Create(gvr, ns_, ConfigMap(ns_, "w2")));
  ASSERT_OK(client_->Delete(gvr, ns_, "w1"));
  std::vector<std::string> seen;
  std::string last_rv;
  while (seen.size() < 4) {
    auto ev = (*watch)->Next();
    ASSERT_OK(ev) << ev.status();
    ASSERT_TRUE(ev->has_value()) << "watch ended early";
    if ((*ev)->type == WatchEventType::kBookmark) continue;
    // The controller-manager publishes kube-root-ca.crt into every new namespace at its own pace.
    if (NameOf((*ev)->object) != "w1" && NameOf((*ev)->object) != "w2") continue;
    seen.push_back(std::string(WatchEventTypeName((*ev)->type)) + " " + NameOf((*ev)->object));
    std::string rv = ResourceVersionOf((*ev)->object);
    EXPECT_GT(std::stoll(rv), last_rv.empty() ? 0 : std::stoll(last_rv));
    last_rv = rv;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED w1", "MODIFIED w1", "ADDED w2", "DELETED w1"}));
  // Stop from another thread unblocks a waiting Next() promptly.
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    (*watch)->Stop();
  });
  auto start = std::chrono::steady_clock::now();
  auto ev = (*watch)->Next();
  while (ev.ok() && ev->has_value() && NameOf((*ev)->object) == "kube-root-ca.crt") ev = (*watch)->Next();
  stopper.join();
  EXPECT_EQ(ev.status().code(), StatusCode::kCancelled) << ev.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

// A resourceVersion from before a resource's watch cache was initialized is "too old" for that
// cache, and compacting etcd makes it too old for etcd as well: either way the answer is 410.
TEST_F(KubeClientTest, WatchFromAnExpiredResourceVersionIsGone) {
  auto old = client_->Create(resources::ConfigMaps(), ns_, ConfigMap(ns_, "old-rv"));
  ASSERT_OK(old) << old.status();
  const std::string suffix = CrdSuffix("b");
  GroupVersionResource gvr = CreateWidgetCrd(suffix);
  ASSERT_OK(client_->Create(gvr, ns_, Widget(suffix, "w", 1)));
  Status compacted = CompactEtcd(cluster_);
  ASSERT_OK(compacted) << compacted;
  WatchOptions wo;
  wo.resource_version = ResourceVersionOf(*old);
  wo.timeout_seconds = 5;
  auto watch = client_->Watch(gvr, ns_, wo);
  Status s = watch.ok() ? Status::Ok() : watch.status();
  if (watch.ok()) {
    auto ev = (*watch)->Next();
    s = !ev.ok() ? ev.status()
        : ev->has_value()
            ? InternalError("got a " + std::string(WatchEventTypeName((*ev)->type)) + " event instead of an error")
            : InternalError("the watch ended without an error");
  }
  EXPECT_EQ(s.code(), StatusCode::kGone) << s;
  auto e = ApiErrorFromStatus(s);
  ASSERT_TRUE(e.has_value()) << s;
  EXPECT_EQ(e->http_code, 410);
  EXPECT_EQ(e->reason, "Expired");
}

TEST_F(KubeClientTest, InformerRelistsOnGoneAndIndexes) {
  auto old = client_->Create(resources::ConfigMaps(), ns_, ConfigMap(ns_, "old-rv"));
  ASSERT_OK(old) << old.status();
  const std::string suffix = CrdSuffix("c");
  GroupVersionResource gvr = CreateWidgetCrd(suffix);
  json w1 = Widget(suffix, "pre-1", 1), w2 = Widget(suffix, "pre-2", 2);
  w1["metadata"]["labels"] = {{"team", "a"}};
  w2["metadata"]["labels"] = {{"team", "b"}};
  auto c1 = client_->Create(gvr, ns_, w1);
  ASSERT_OK(c1) << c1.status();
  ASSERT_OK(client_->Create(gvr, ns_, w2));
  Status compacted = CompactEtcd(cluster_);
  ASSERT_OK(compacted) << compacted;
  InformerOptions o;
  o.ns = ns_;
  o.start_resource_version = ResourceVersionOf(*old);  // expired: the informer must relist
  o.indexers["team"] = IndexByLabel("team");
  Informer informer(client_, gvr, o);
  WorkQueue queue;
  informer.AddEventHandler(EnqueueHandler(&queue));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(20)));
  EXPECT_EQ(informer.lists(), 1);
  EXPECT_EQ(informer.store().Size(), 2u);
  EXPECT_NE(informer.store().Get(ns_ + "/pre-1"), nullptr);
  ASSERT_EQ(informer.store().ByIndex("team", "b").size(), 1u);
  EXPECT_EQ(NameOf(*informer.store().ByIndex("team", "b")[0]), "pre-2");
  EXPECT_EQ(informer.store().ByIndex(kNamespaceIndex, ns_).size(), 2u);
  // Later changes flow through the watch that follows the relist.
  ASSERT_OK(client_->Delete(gvr, ns_, "pre-1"));
  Status deleted = WaitFor("pre-1 to leave the cache", seconds(10),
                           [&](std::string*) { return informer.store().Get(ns_ + "/pre-1") == nullptr; });
  EXPECT_OK(deleted) << deleted;
  EXPECT_EQ(informer.lists(), 1);
  informer.Stop();
  // The handler only enqueued keys, collapsed per key.
  std::set<std::string> keys;
  while (queue.Len() > 0) {
    auto k = queue.Get();
    keys.insert(*k);
    queue.Done(*k);
  }
  EXPECT_EQ(keys, (std::set<std::string>{ns_ + "/pre-1", ns_ + "/pre-2"}));
}

TEST_F(KubeClientTest, InformerResumesWatchesWithoutRelistingOrLosingEvents) {
  auto gvr = resources::ConfigMaps();
  InformerOptions o;
  o.ns = ns_;
  o.watch_timeout_seconds = 1;  // the server ends every watch after 1 s
  o.resync_period = milliseconds(300);
  Informer informer(client_, gvr, o);
  std::mutex mu;
  std::vector<std::string> adds, deletes;
  std::atomic<int> resync_updates{0};
  EventHandler h;
  h.on_add = [&](const json& obj) {
    std::lock_guard<std::mutex> lock(mu);
    if (NameOf(obj)[0] == 'r') adds.push_back(NameOf(obj));  // not kube-root-ca.crt
  };
  h.on_update = [&](const json& a, const json& b) {
    if (ResourceVersionOf(a) == ResourceVersionOf(b)) resync_updates++;
  };
  h.on_delete = [&](const json& obj) {
    std::lock_guard<std::mutex> lock(mu);
    deletes.push_back(NameOf(obj));
  };
  informer.AddEventHandler(h);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(20)));
  // Two creates per watch window, so the events span at least three watches. Counted, not timed: with 500 ms
  // sleeps a slow machine (ThreadSanitizer: each watch's new connection takes longer) saw only two watches.
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK(client_->Create(gvr, ns_, ConfigMap(ns_, "r" + std::to_string(i))));
    if (i % 2 == 0) continue;
    const int64_t seen = informer.watches();
    Status next = WaitFor("the server to end watch " + std::to_string(seen), seconds(20), [&](std::string* last) {
      *last = std::to_string(informer.watches()) + " watches";
      return informer.watches() > seen;
    });
    ASSERT_OK(next) << next;
  }
  ASSERT_OK(client_->Delete(gvr, ns_, "r0"));
  Status all = WaitFor("all events", seconds(20), [&](std::string* last) {
    std::lock_guard<std::mutex> lock(mu);
    *last = std::to_string(adds.size()) + " adds, " + std::to_string(deletes.size()) + " deletes";
    return adds.size() >= 6 && deletes.size() >= 1;
  });
  ASSERT_OK(all) << all;
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(adds, (std::vector<std::string>{"r0", "r1", "r2", "r3", "r4", "r5"}));
    EXPECT_EQ(deletes, std::vector<std::string>{"r0"});
  }
  EXPECT_EQ(informer.lists(), 1) << "a server-side watch timeout must not cause a relist";
  EXPECT_GT(resync_updates.load(), 0);
  EXPECT_EQ(informer.store().Get(ns_ + "/r0"), nullptr);
  EXPECT_NE(informer.store().Get(ns_ + "/r5"), nullptr);
  informer.Stop();
}

TEST_F(KubeClientTest, TlsVerificationIsOnUnlessTheKubeconfigSaysInsecure) {
  ClientConfig untrusted = config_;
  untrusted.ca_pem.clear();  // system roots do not include the cluster's CA
  auto strict = NewClient(untrusted);
  ASSERT_OK(strict) << strict.status();
  auto refused = (*strict)->Get(resources::Namespaces(), "", ns_);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
  EXPECT_FALSE(ApiErrorFromStatus(refused.status()).has_value())
      << "no HTTP answer may come over an unverified TLS connection";

  ClientConfig insecure = untrusted;
  insecure.insecure_skip_tls_verify = true;
  std::vector<std::string> warnings;
  std::mutex mu;
  auto lax = NewClient(insecure, nullptr, [&](LogLevel level, std::string_view m) {
    std::lock_guard<std::mutex> lock(mu);
    if (level == LogLevel::kWarning) warnings.emplace_back(m);
  });
  ASSERT_OK(lax) << lax.status();
  EXPECT_OK((*lax)->Get(resources::Namespaces(), "", ns_));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("insecure-skip-tls-verify"), std::string::npos) << warnings[0];
}

// The kubeconfig's CA is the only one trusted, as in client-go: here the system trust store
// (SSL_CERT_FILE, read by OpenSSL at every connection) holds the cluster's CA, and a client given
// another CA must still refuse the apiserver. A client that added its CA to the system store would pass.
TEST_F(KubeClientTest, TheKubeconfigsCaIsTheOnlyOneTrusted) {
  const std::string dir = ::testing::TempDir() + "/" + UniqueName("trust");
  std::filesystem::create_directories(dir);
  auto made = ringmaster::testing::RunCommand(
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
       dir + "/other.key", "-out", dir + "/other.crt", "-subj", "/CN=another-ca", "-days", "1"},
      seconds(30));
  ASSERT_OK(made);
  ASSERT_TRUE(made->ok()) << made->err;
  std::ifstream other_file(dir + "/other.crt");
  ClientConfig other = config_;
  other.ca_pem.assign(std::istreambuf_iterator<char>(other_file), std::istreambuf_iterator<char>());
  ASSERT_NE(other.ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  std::ofstream(dir + "/system.crt") << config_.ca_pem;

  ASSERT_EQ(::setenv("SSL_CERT_FILE", (dir + "/system.crt").c_str(), 1), 0);
  auto with_other = NewClient(other);
  auto with_cluster = NewClient(config_);
  ASSERT_OK(with_other) << with_other.status();
  ASSERT_OK(with_cluster) << with_cluster.status();
  auto refused = (*with_other)->Get(resources::Namespaces(), "", ns_);
  auto accepted = (*with_cluster)->Get(resources::Namespaces(), "", ns_);
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
  EXPECT_OK(accepted);
  std::filesystem::remove_all(dir);
}

TEST_F(KubeClientTest, TokenWithoutRbacGetsPermissionDenied403) {
  std::string token = TokenFor("nobody");
  ASSERT_FALSE(token.empty());
  auto nobody = ClientWithToken(token);
  ASSERT_NE(nobody, nullptr);
  auto denied = nobody->List(resources::Pods(), ns_);
  ASSERT_EQ(denied.status().code(), StatusCode::kPermissionDenied) << denied.status();
  auto e = ApiErrorFromStatus(denied.status());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_code, 403);
  EXPECT_EQ(e->reason, "Forbidden");
  auto anon = ClientWithToken("not-a-token");
  EXPECT_EQ(anon->List(resources::Pods(), ns_).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(KubeClientTest, RotatedTokenFileIsPickedUp) {
  ASSERT_OK(client_->Create(
      resources::Roles(), ns_,
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "Role"},
       {"metadata", {{"name", "cm-reader"}}},
       {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"get", "list"}}}})}}));
  ASSERT_OK(client_->Create(
      resources::RoleBindings(), ns_,
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "RoleBinding"},
       {"metadata", {{"name", "reader"}}},
       {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "cm-reader"}}},
       {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "reader"}, {"namespace", ns_}}})}}));
  std::string nobody = TokenFor("nobody"), reader = TokenFor("reader");
  ASSERT_FALSE(nobody.empty());
  ASSERT_FALSE(reader.empty());
  std::string dir = cluster_.dir() + "/" + UniqueName("tokens");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/token";
  std::ofstream(path) << nobody;
  auto client = ClientWithToken("", path);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->List(resources::ConfigMaps(), ns_).status().code(), StatusCode::kPermissionDenied);
  // Rotate the way the kubelet does: write a new file, rename it into place.
  std::ofstream(path + ".tmp") << reader;
  std::filesystem::rename(path + ".tmp", path);
  auto allowed = client->List(resources::ConfigMaps(), ns_);
  EXPECT_OK(allowed) << allowed.status();
  std::filesystem::remove_all(dir);
}

// Runs a LeaderElector on its own thread.
class Candidate {
 public:
  Candidate(std::shared_ptr<Client> client, const std::string& ns, const std::string& id, bool release) {
    LeaderElectionConfig c;
    c.lease_namespace = ns;
    c.lease_name = "election";
    c.identity = id;
    c.lease_duration = seconds(3);
    c.renew_deadline = seconds(2);
    c.retry_period = milliseconds(250);
    c.release_on_cancel = release;
    c.on_started_leading = [this] { started = std::chrono::steady_clock::now(); };
    c.on_stopped_leading = [this] { stopped_leading++; };
    auto e = LeaderElector::Create(std::move(client), c);
    EXPECT_OK(e) << e.status();
    elector = std::move(e).value();
    thread = std::thread([this] { elector->Run(); });
  }
  ~Candidate() { Stop(); }
  void Stop() {
    elector->Stop();
    if (thread.joinable()) thread.join();
  }
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> stopped_leading{0};
  std::atomic<std::chrono::steady_clock::time_point> started{};
  std::thread thread;
};

TEST_F(KubeClientTest, LeaderElectionHandsOverWithinTheLeaseDurationWhenTheLeaderDies) {
  Candidate a(client_, ns_, "a", /*release=*/false);
  ASSERT_OK(WaitFor("a to lead", seconds(10), [&](std::string*) { return a.elector->IsLeader(); }));
  Candidate b(client_, ns_, "b", false);
  std::this_thread::sleep_for(seconds(1));
  EXPECT_FALSE(b.elector->IsLeader()) << "two leaders at once";
  EXPECT_EQ(b.elector->GetLeader(), "a");
  // a "dies" without releasing: b must take over once the lease expires (3 s), not much later.
  auto died = std::chrono::steady_clock::now();
  a.Stop();
  ASSERT_OK(WaitFor("b to lead", seconds(10), [&](std::string*) { return b.elector->IsLeader(); }));
  auto handover = std::chrono::steady_clock::now() - died;
  EXPECT_LE(handover, seconds(3) + milliseconds(3500)) << "lease duration 3 s (slack for a loaded 2-core machine)";
  EXPECT_GE(handover, seconds(2)) << "b took a lease that had not expired";
  EXPECT_EQ(a.stopped_leading, 1);
  auto lease = client_->Get(resources::Leases(), ns_, "election");
  ASSERT_OK(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
}

TEST_F(KubeClientTest, LeaderElectionReleasesOnStopForAFastHandover) {
  Candidate a(client_, ns_, "a", /*release=*/true);
  ASSERT_OK(WaitFor("a to lead", seconds(10), [&](std::string*) { return a.elector->IsLeader(); }));
  Candidate b(client_, ns_, "b", true);
  std::this_thread::sleep_for(milliseconds(500));
  auto stopped = std::chrono::steady_clock::now();
  a.Stop();
  ASSERT_OK(WaitFor("b to lead", seconds(10), [&](std::string*) { return b.elector->IsLeader(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, milliseconds(4000)) << "a released lease is free at once";
}

TEST_F(KubeClientTest, LeaderLosingTheLeaseIsToldWithinTheRenewDeadline) {
  Candidate a(client_, ns_, "a", false);
  ASSERT_OK(WaitFor("a to lead", seconds(10), [&](std::string*) { return a.elector->IsLeader(); }));
  // Someone else takes the lease (as an admin might, or a partitioned leader would observe).
  // The leader renews every 250 ms, so this read-modify-write retries on Conflict like any controller.
  Status taken_over = ConflictError("not tried");
  for (int attempt = 0; attempt < 20 && IsConflict(taken_over); ++attempt) {
    auto lease = client_->Get(resources::Leases(), ns_, "election");
    ASSERT_OK(lease) << lease.status();
    (*lease)["spec"]["holderIdentity"] = "usurper";
    (*lease)["spec"]["leaseDurationSeconds"] = 60;
    auto updated = client_->Update(resources::Leases(), ns_, *lease);
    taken_over = updated.ok() ? Status::Ok() : updated.status();
  }
  ASSERT_OK(taken_over) << taken_over;
  auto taken = std::chrono::steady_clock::now();
  ASSERT_OK(WaitFor("a to notice", seconds(10), [&](std::string*) { return a.stopped_leading.load() == 1; }));
  EXPECT_LE(std::chrono::steady_clock::now() - taken, seconds(2) + milliseconds(3000)) << "renew deadline 2 s";
  EXPECT_FALSE(a.elector->IsLeader());
}

TEST_F(KubeClientTest, EventRecorderAggregatesRepeatsAndRateLimitsFloods) {
  auto cm = client_->Create(resources::ConfigMaps(), ns_, ConfigMap(ns_, "subject"));
  ASSERT_OK(cm) << cm.status();
  EventRecorderOptions o;
  o.component = "ringmaster-test";
  o.host = "test-host";
  o.burst_per_object = 15;
  EventRecorder recorder(client_, o);
  for (int i = 0; i < 10; ++i) recorder.Event(*cm, "Warning", "BackOff", "restarting failed container");
  for (int i = 0; i < 20; ++i) recorder.Event(*cm, "Normal", "Flood", "message " + std::to_string(i));
  ASSERT_TRUE(recorder.Flush(seconds(30)));
  EXPECT_EQ(recorder.dropped(), 15);  // 10 + 20 events against a burst of 15
  ListOptions lo;
  lo.field_selector = "involvedObject.name=subject";
  auto events = client_->List(resources::Events(), ns_, lo);
  ASSERT_OK(events) << events.status();
  int backoff = 0, flood = 0;
  for (const auto& ev : (*events)["items"]) {
    if (ev.value("reason", "") == "BackOff") {
      ++backoff;
      EXPECT_EQ(ev.value("count", 0), 10) << ev.dump();
      EXPECT_EQ(ev["involvedObject"].value("uid", ""), UidOf(*cm));
      EXPECT_EQ(ev["source"].value("component", ""), "ringmaster-test");
    } else if (ev.value("reason", "") == "Flood") {
      ++flood;
    }
  }
  EXPECT_EQ(backoff, 1) << "repeats must bump count on one Event";
  EXPECT_EQ(flood, 5);
}

}  // namespace
}  // namespace ringmaster::kube
