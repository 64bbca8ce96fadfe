// ringmaster-operator end to end on the real control plane: a real apiserver, scheduler and
// controller-manager, KWOK GPU nodes, and the operator binary as its own process (one per test,
// watching only that test's namespace). Every assertion reads the live API with a bounded wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/status_test_macros.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "operator/controller/reconciler.h"
#include "tests/support/cluster_test.h"
#include "tests/support/manifests.h"
#include "tests/support/operator_process.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// Every version of the TrainingJobs in one namespace, in the order the apiserver's watch delivered them,
// so that a wait sees a state that lasted less than one poll (a generation replaced within a second on a
// loaded machine). Thread-safe: the informer's thread appends, the test reads.
class JobHistory {
 public:
  Status Start(const TestCluster& cluster, const std::string& ns) {
    RINGMASTER_ASSIGN_OR_RETURN(kube::ClientConfig config,
                                kube::LoadConfig(cluster.kubeconfig(), "", kube::ProcessEnvironment()));
    RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<kube::Client> client, kube::NewClient(config));
    kube::InformerOptions options;
    options.ns = ns;
    informer_ = std::make_unique<kube::Informer>(client, controller::TrainingJobs(), options);
    auto record = [this](const json& job) {
      std::lock_guard<std::mutex> lock(mu_);
      versions_.push_back(job);
    };
    informer_->AddEventHandler({record, [record](const json&, const json& job) { record(job); }, nullptr});
    informer_->Start();
    if (!informer_->WaitForSync(seconds(30))) return DeadlineExceededError("the TrainingJob watch did not sync");
    return Status::Ok();
  }

  // The first version of job `name` at or after *cursor that satisfies `pred`; moves *cursor past it.
  std::optional<json> FirstSince(size_t* cursor, const std::string& name,
                                 const std::function<bool(const json&)>& pred) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = *cursor; i < versions_.size(); ++i) {
      if (kube::NameOf(versions_[i]) != name || !pred(versions_[i])) continue;
      *cursor = i + 1;
      return versions_[i];
    }
    return std::nullopt;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return versions_.size();
  }

 private:
  std::unique_ptr<kube::Informer> informer_;
  mutable std::mutex mu_;
  std::vector<json> versions_;  // guarded by mu_
};

class OperatorE2eTest : public JobTest {
 protected:
  OperatorE2eTest() : JobTest("op") {}

  void SetUp() override {
    JobTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK(history_.Start(cluster_, ns_));
  }

  void TearDown() override {
    for (size_t i = 0; i < operators_.size(); ++i) {
      if (HasFailure()) std::cerr << "---- operator " << i << " log ----\n" << operators_[i]->Log() << "\n";
      operators_[i]->Stop(seconds(5));
    }
    ClusterTest::TearDown();
  }

  BackgroundProcess* StartOperator(std::vector<std::string> extra = {}) {
    auto p = std::make_unique<BackgroundProcess>();
    std::string log = ::testing::TempDir() + ns_ + "-operator-" + std::to_string(operators_.size()) + ".log";
    Status s = StartOperatorProcess(p.get(), RINGMASTER_OPERATOR_BIN, cluster_, ns_, log, extra);
    EXPECT_OK(s) << s;
    operators_.push_back(std::move(p));
    return operators_.back().get();
  }

  // A fake GPU node in this test's own pool (jobs select it with `pool`), so GPU capacity is exact.
  void AddNode(const std::string& name, int gpus) { AddPoolNode(name, ns_, gpus); }

  // A job of workers with one GPU each; `pool` pins it to this test's nodes.
  // `replicas_extra`: more of spec.replicas (", multipleOf: 2").
  void ApplyJob(const std::string& name, int min, int max, const std::string& extra_spec = "", bool pool = false,
                const std::string& replicas_extra = "") {
    std::string manifest = ringmaster::testing::TrainingJobHead() + "metadata:\n  name: " + name +
                           "\n  namespace: " + ns_ + "\nspec:\n  replicas: {min: " + std::to_string(min) +
                           ", max: " + std::to_string(max) + replicas_extra +
                           "}\n  elasticPolicy: {joinBatchWindowSeconds: 1}\n" + extra_spec +
                           "  template:\n    spec:\n" + (pool ? PoolPlacement(ns_, 6) : "") +
                           "      containers:\n      - name: trainer\n        image: example/trainer:1\n"
                           "        resources: {limits: {nvidia.com/gpu: 1}}\n";
    Status s = cluster_.Apply(manifest);
    ASSERT_OK(s) << s;
  }

  json Job(const std::string& name) {
    auto j = cluster_.KubectlJson({"get", "tj", name, "-n", ns_});
    return j.ok() ? *j : json::object();
  }
  static json Membership(const json& job) {
    return job.value("status", json::object()).value("membership", json::object());
  }
  static int64_t Generation(const json& job) { return Membership(job).value("generation", int64_t{0}); }
  static int WorldSize(const json& job) { return Membership(job).value("worldSize", 0); }
  static std::vector<std::string> MemberPods(const json& job) {
    std::vector<std::string> out;
    for (const auto& m : Membership(job).value("members", json::array())) out.push_back(m.value("pod", ""));
    return out;
  }
  static json Condition(const json& job, const std::string& type) {
    for (const auto& c : job.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == type) return c;
    return json::object();
  }

  // Waits until `pred(job)` holds; returns the job as then seen: as it is now, or else the first version
  // since the previous wait that the watch delivered with `pred` holding (a state that came and went
  // between two polls).
  json WaitForJob(const std::string& name, const std::string& what, seconds timeout,
                  const std::function<bool(const json&)>& pred) {
    json job;
    Status s = WaitFor(what, timeout, [&](std::string* last) {
      job = Job(name);
      *last = job.value("status", json::object()).dump();
      if (pred(job)) {
        history_cursor_ = history_.size();
        return true;
      }
      std::optional<json> seen = history_.FirstSince(&history_cursor_, name, pred);
      if (seen) job = *std::move(seen);
      return seen.has_value();
    });
    EXPECT_OK(s) << s;
    return job;
  }

  std::vector<json> Pods(const std::string& job) {
    auto r = cluster_.KubectlJson({"get", "pods", "-n", ns_, "-l", std::string(api::kJobNameLabel) + "=" + job});
    std::vector<json> out;
    if (r.ok())
      for (const auto& p : (*r)["items"]) out.push_back(p);
    return out;
  }

  Status Kubectl(const std::vector<std::string>& args) {
    auto r = cluster_.Kubectl(args);
    if (!r.ok()) return r.status();
    return r->ok() ? Status::Ok() : UnknownError(r->err);
  }

  std::vector<std::unique_ptr<BackgroundProcess>> operators_;
  JobHistory history_;
  size_t history_cursor_ = 0;  // versions before it were seen by an earlier wait
};

TEST_F(OperatorE2eTest, GangWaitsWithAClearConditionThenGrowsAsGpusArrive) {
  AddNode(ns_ + "-a", 1);
  StartOperator();
  ApplyJob("gang", 2, 3, "", /*pool=*/true);
  json waiting = WaitForJob("gang", "a WaitingForWorkers condition", seconds(60), [](const json& j) {
    return Condition(j, "Running").value("reason", "") == "WaitingForWorkers" &&
           Condition(j, "Running").value("message", "").find("1 Ready") != std::string::npos;
  });
  EXPECT_NE(Condition(waiting, "Running").value("message", "").find("waiting for 2 Ready workers"), std::string::npos);
  EXPECT_EQ(Generation(waiting), 0);
  EXPECT_EQ(waiting["status"].value("phase", ""), "Pending");

  AddNode(ns_ + "-b", 1);  // now two GPUs: the gang can start
  json started = WaitForJob("gang", "the gang to start", seconds(60), [](const json& j) { return WorldSize(j) >= 2; });
  EXPECT_EQ(Membership(started).value("reason", ""), "JobStarted");
  AddNode(ns_ + "-c", 1);  // a third GPU: growth to max
  json grown = WaitForJob("gang", "growth to 3 workers", seconds(60), [](const json& j) { return WorldSize(j) == 3; });
  EXPECT_GT(Generation(grown), Generation(started));
  EXPECT_EQ(grown["status"].value("phase", ""), "Running");
}

// spec.replicas.multipleOf 2 with GPUs for three workers: the world is 2 and the third waits, saying why;
// a fourth GPU completes the group and the world is 4, never 3.
TEST_F(OperatorE2eTest, MultipleOfPublishesWholeGroupsWhileASpareWaits) {
  for (const char* n : {"-a", "-b", "-c"}) AddNode(ns_ + n, 1);
  StartOperator();
  ApplyJob("groups", 2, 4, "", /*pool=*/true, ", multipleOf: 2");
  json two = WaitForJob("groups", "a world of 2 and a waiting spare", seconds(90), [](const json& j) {
    return WorldSize(j) == 2 &&
           Condition(j, "Running")
                   .value("message", "")
                   .find("1 Ready worker waiting for 1 more worker to complete a group of 2") != std::string::npos;
  });
  EXPECT_EQ(two["status"]["replicas"].value("ready", 0), 3) << two["status"].dump();
  for (const auto& pod : Pods("groups")) {
    std::string multiple_of = "(unset)";
    for (const auto& e : pod["spec"]["containers"][0]["env"]) {
      if (e.value("name", "") == std::string(api::env::kReplicasMultipleOf)) multiple_of = e.value("value", "");
    }
    EXPECT_EQ(multiple_of, "2") << "RINGMASTER_REPLICAS_MULTIPLE_OF of " << kube::NameOf(pod);
  }
  AddNode(ns_ + "-d", 1);
  json four = WaitForJob("groups", "a world of 4", seconds(90), [](const json& j) { return WorldSize(j) == 4; });
  EXPECT_EQ(Membership(four).value("reason", ""), "WorkerJoined");
  size_t cursor = 0;
  EXPECT_FALSE(history_.FirstSince(&cursor, "groups", [](const json& j) { return WorldSize(j) % 2 != 0; }).has_value())
      << "a world that is not a whole number of groups was published";
}

TEST_F(OperatorE2eTest, FailedRankZeroIsReplacedAndSurvivorsKeepTheirOrder) {
  StartOperator();
  ApplyJob("fail", 2, 4);
  json full = WaitForJob("fail", "4 workers", seconds(60), [](const json& j) { return WorldSize(j) == 4; });
  std::vector<std::string> before = MemberPods(full);
  int64_t g = Generation(full);
  ASSERT_OK(Kubectl({"label", "pod", before[0], "-n", ns_, "pod-container-running-failed.stage.kwok.x-k8s.io=true"}));
  json after = WaitForJob("fail", "a generation without rank 0", seconds(60),
                          [&](const json& j) { return Generation(j) > g && WorldSize(j) == 3; });
  EXPECT_EQ(MemberPods(after), std::vector<std::string>(before.begin() + 1, before.end()));
  EXPECT_EQ(Membership(after).value("reason", ""), "WorkerFailed");
  EXPECT_EQ(after["status"].value("restartCount", 0), 1);
  // The replacement (a new name: the failed pod is kept for its logs) joins after the survivors.
  json healed =
      WaitForJob("fail", "the replacement to join", seconds(60), [](const json& j) { return WorldSize(j) == 4; });
  std::vector<std::string> now = MemberPods(healed);
  EXPECT_EQ(std::vector<std::string>(now.begin(), now.begin() + 3),
            std::vector<std::string>(before.begin() + 1, before.end()));
  EXPECT_NE(now[3], before[0]);
  EXPECT_EQ(healed["status"]["recentFailures"][0].value("pod", ""), before[0]);
  std::vector<json> pods = Pods("fail");
  EXPECT_EQ(pods.size(), 5u);
  for (const auto& p : pods) {
    if (p["metadata"].value("name", "") == before[0]) {
      EXPECT_EQ(p["status"].value("phase", ""), "Failed");
    }
  }
}

// Pods the apiserver refuses (a ResourceQuota here; PodSecurity or an invalid template alike) are named on the job:
// a Warning Event FailedCreate with the apiserver's words and the Running condition's reason, until they can be
// created.
TEST_F(OperatorE2eTest, PodsTheApiserverRefusesAreNamedOnTheJobUntilTheyCanBeCreated) {
  ASSERT_OK(cluster_.Apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: two-pods, namespace: " + ns_ +
                           "}\nspec: {hard: {pods: \"1\"}}\n"));
  StartOperator();
  ApplyJob("quota", 2, 2);
  json refused = WaitForJob("quota", "the Running condition to say FailedCreate", seconds(60), [](const json& j) {
    return Condition(j, "Running").value("reason", "") == "FailedCreate";
  });
  EXPECT_NE(Condition(refused, "Running").value("message", "").find("exceeded quota"), std::string::npos)
      << Condition(refused, "Running").dump();
  Status event = WaitFor("a FailedCreate event on the job", seconds(30), [&](std::string* last) {
    auto r = cluster_.KubectlJson(
        {"get", "events", "-n", ns_, "--field-selector", "involvedObject.name=quota,reason=FailedCreate"});
    if (r.ok()) *last = r->dump();
    return r.ok() && !(*r)["items"].empty() &&
           (*r)["items"][0].value("message", "").find("exceeded quota") != std::string::npos;
  });
  EXPECT_OK(event) << event;
  ASSERT_OK(Kubectl({"delete", "resourcequota", "two-pods", "-n", ns_}));
  json running = WaitForJob("quota", "2 workers once the quota is gone", seconds(90),
                            [](const json& j) { return WorldSize(j) == 2; });
  EXPECT_EQ(Condition(running, "Running").value("reason", ""), "WorkersRunning");
}

TEST_F(OperatorE2eTest, NotReadyNodeLosesItsWorkersWithinTheDetectionWindow) {
  AddNode(ns_ + "-a", 1);
  AddNode(ns_ + "-b", 1);
  StartOperator();
  ApplyJob("nodes", 1, 2, "  elasticPolicy: {joinBatchWindowSeconds: 1, nodeUnresponsiveSeconds: 3}\n", true);
  json full = WaitForJob("nodes", "2 workers", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  std::string lost_pod, lost_node = ns_ + "-b";
  const json members = Membership(full).value("members", json::array());
  for (const auto& m : members)
    if (m.value("node", "") == lost_node) lost_pod = m.value("pod", "");
  ASSERT_FALSE(lost_pod.empty()) << full.dump();
  auto start = Clock::now();
  ASSERT_OK(Kubectl({"label", "node", lost_node, "node-not-ready.stage.kwok.x-k8s.io=true"}));
  json after = WaitForJob("nodes", "the lost node's worker to leave", seconds(60),
                          [](const json& j) { return WorldSize(j) == 1; });
  double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(Membership(after).value("reason", ""), "NodeLost");
  EXPECT_LT(took, 3 + 12.0) << "dropped after " << took << " s with a 3 s window";
  // Its pod is deleted rather than left for the five-minute eviction.
  Status deleted = WaitFor("the lost worker's pod to be deleted", seconds(30), [&](std::string*) {
    for (const auto& p : Pods("nodes"))
      if (p["metadata"].value("name", "") == lost_pod && !p["metadata"].contains("deletionTimestamp")) return false;
    return true;
  });
  EXPECT_OK(deleted) << deleted;
}

TEST_F(OperatorE2eTest, KubectlScaleShrinksAndGrowsTheWorld) {
  StartOperator();
  ApplyJob("scale", 1, 4);
  WaitForJob("scale", "4 workers", seconds(60), [](const json& j) { return WorldSize(j) == 4; });
  ASSERT_OK(Kubectl({"scale", "-n", ns_, "tj/scale", "--replicas=2"}));
  json down = WaitForJob("scale", "2 workers", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  EXPECT_EQ(Membership(down).value("reason", ""), "ScaledDown");
  // The two that left are not deleted under their workers' feet: they are listed as leaving until they
  // exit 0 (here KWOK's completed stage plays the worker committing and exiting).
  json leaving = WaitForJob("scale", "2 leaving workers", seconds(30), [](const json& j) {
    return j.value("status", json::object()).value("leaving", json::array()).size() == 2;
  });
  std::vector<std::string> members = MemberPods(down);
  EXPECT_EQ(Pods("scale").size(), 4u) << "a leaving worker's pod was deleted before it exited";
  for (const auto& l : leaving["status"]["leaving"]) {
    std::string pod = l.value("pod", "");
    EXPECT_EQ(std::count(members.begin(), members.end(), pod), 0) << pod;
    ASSERT_OK(Kubectl({"label", "pod", pod, "-n", ns_, "pod-container-completed.stage.kwok.x-k8s.io=true"}));
  }
  ASSERT_OK(WaitFor("2 pods", seconds(60), [&](std::string*) {
    size_t live = 0;
    for (const auto& p : Pods("scale")) live += !p["metadata"].contains("deletionTimestamp");
    return live == 2;
  }));
  ASSERT_OK(Kubectl({"scale", "-n", ns_, "tj/scale", "--replicas=3"}));
  json up = WaitForJob("scale", "3 workers", seconds(60), [](const json& j) { return WorldSize(j) == 3; });
  EXPECT_EQ(Membership(up).value("reason", ""), "ScaledUp");
}

TEST_F(OperatorE2eTest, ServesMetricsAndProbes) {
  BackgroundProcess* op = StartOperator();
  ApplyJob("metrics", 1, 2);
  WaitForJob("metrics", "2 workers", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  std::string metrics_port = LoggedPort(op->Log(), "metrics");
  std::string health_port = LoggedPort(op->Log(), "/healthz and /readyz");
  ASSERT_FALSE(metrics_port.empty()) << op->Log();
  ASSERT_FALSE(health_port.empty()) << op->Log();
  for (const char* probe : {"/healthz", "/readyz"}) {
    auto r =
        RunCommand({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:" + health_port + probe});
    ASSERT_OK(r);
    EXPECT_EQ(r->out, "200") << probe;
  }
  auto m = RunCommand({"curl", "-s", "http://127.0.0.1:" + metrics_port + "/metrics"});
  ASSERT_COMMAND_OK(m);
  for (const char* series : {"ringmaster_membership_changes_total{reason=\"JobStarted\"} 1",
                             "# TYPE ringmaster_membership_publish_latency_seconds histogram",
                             "controller_runtime_reconcile_total{controller=\"trainingjob\",result=\"success\"}",
                             "ringmaster_trainingjobs{phase=\"Running\"} 1", "leader_election_master_status{",
                             "rest_client_requests_total{", "workqueue_depth{"}) {
    EXPECT_NE(m->out.find(series), std::string::npos) << series << " missing from /metrics";
  }
}

TEST_F(OperatorE2eTest, OperatorRestartCreatesNoDuplicatesAndBumpsNoGeneration) {
  BackgroundProcess* first = StartOperator();
  ApplyJob("restart", 2, 3);
  json before = WaitForJob("restart", "3 workers", seconds(60), [](const json& j) { return WorldSize(j) == 3; });
  std::set<std::string> uids_before;
  for (const auto& p : Pods("restart")) uids_before.insert(p["metadata"].value("uid", ""));
  // The job's Secret: created once, owned by the job, immutable, 32 random bytes in hex.
  auto secret_before = cluster_.KubectlJson({"get", "secret", "restart-worker-secret", "-n", ns_});
  ASSERT_OK(secret_before) << secret_before.status();
  EXPECT_EQ((*secret_before)["metadata"]["ownerReferences"][0].value("uid", ""), before["metadata"].value("uid", "x"));
  EXPECT_EQ((*secret_before).value("immutable", false), true);
  const std::string secret_data = (*secret_before)["data"].value("secret", "");
  EXPECT_EQ(secret_data.size(), 88u) << "64 hex digits, base64-encoded";
  // The job's NetworkPolicy: owned by the job, over its workers, admitting every port only from them.
  auto policy_before = cluster_.KubectlJson({"get", "networkpolicy", "restart-workers", "-n", ns_});
  ASSERT_OK(policy_before) << policy_before.status();
  EXPECT_EQ((*policy_before)["metadata"]["ownerReferences"][0].value("uid", ""), before["metadata"].value("uid", "x"));
  const json job_selector = {{"matchLabels", {{std::string(api::kJobNameLabel), "restart"}}}};
  EXPECT_EQ((*policy_before)["spec"]["podSelector"], job_selector);
  EXPECT_EQ((*policy_before)["spec"]["ingress"][0]["from"][0]["podSelector"], job_selector);
  EXPECT_EQ(first->Stop(), 0) << first->Log();
  BackgroundProcess* second = StartOperator();
  ASSERT_OK(WaitFor("the new operator to sync", seconds(30),
                    [&](std::string*) { return second->Log().find("caches synced") != std::string::npos; }));
  std::this_thread::sleep_for(seconds(5));  // room for any (wrong) write to land
  json after = Job("restart");
  EXPECT_EQ(Generation(after), Generation(before));
  std::set<std::string> uids_after;
  for (const auto& p : Pods("restart")) uids_after.insert(p["metadata"].value("uid", ""));
  EXPECT_EQ(uids_after, uids_before);
  // The restart did not rotate the secret under the running workers.
  auto secret_after = cluster_.KubectlJson({"get", "secret", "restart-worker-secret", "-n", ns_});
  ASSERT_OK(secret_after) << secret_after.status();
  EXPECT_EQ((*secret_after)["metadata"].value("uid", ""), (*secret_before)["metadata"].value("uid", "x"));
  EXPECT_EQ((*secret_after)["metadata"].value("resourceVersion", ""),
            (*secret_before)["metadata"].value("resourceVersion", "x"));
  EXPECT_EQ((*secret_after)["data"].value("secret", ""), secret_data);
  // Nor rewrote the NetworkPolicy: created once, then left alone.
  auto policy_after = cluster_.KubectlJson({"get", "networkpolicy", "restart-workers", "-n", ns_});
  ASSERT_OK(policy_after) << policy_after.status();
  EXPECT_EQ((*policy_after)["metadata"].value("resourceVersion", ""),
            (*policy_before)["metadata"].value("resourceVersion", "x"));
}

TEST_F(OperatorE2eTest, JobSucceedsWhenRankZeroExitsZero) {
  StartOperator();
  ApplyJob("done", 2, 2);
  json running = WaitForJob("done", "2 workers", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  std::string rank0 = MemberPods(running)[0];
  ASSERT_OK(Kubectl({"label", "pod", rank0, "-n", ns_, "pod-container-completed.stage.kwok.x-k8s.io=true"}));
  json done = WaitForJob("done", "phase Succeeded", seconds(60), [](const json& j) {
    return j.value("status", json::object()).value("phase", "") == "Succeeded";
  });
  EXPECT_EQ(Condition(done, "Succeeded").value("reason", ""), "Completed");
  EXPECT_TRUE(done["status"].contains("completionTime"));
  // The other, still-running worker is cleaned up (cleanPodPolicy Running).
  EXPECT_TRUE(WaitFor("the other worker to be deleted", seconds(60), [&](std::string*) {
                for (const auto& p : Pods("done"))
                  if (p["status"].value("phase", "") == "Running" && !p["metadata"].contains("deletionTimestamp"))
                    return false;
                return true;
              }).ok());
}

TEST_F(OperatorE2eTest, SuspendDeletesWorkersKeepsStatusAndResumeRecreatesThem) {
  StartOperator();
  ApplyJob("pause", 1, 2);
  json running = WaitForJob("pause", "2 workers", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  ASSERT_OK(
      Kubectl({"patch", "tj", "pause", "-n", ns_, "--type=merge", "-p", R"({"spec":{"runPolicy":{"suspend":true}}})"}));
  json paused = WaitForJob("pause", "phase Suspended", seconds(60), [](const json& j) {
    return j.value("status", json::object()).value("phase", "") == "Suspended";
  });
  EXPECT_GT(Generation(paused), Generation(running));
  EXPECT_OK(WaitFor("no workers", seconds(60), [&](std::string*) { return Pods("pause").empty(); }));
  ASSERT_OK(Kubectl(
      {"patch", "tj", "pause", "-n", ns_, "--type=merge", "-p", R"({"spec":{"runPolicy":{"suspend":false}}})"}));
  json resumed = WaitForJob("pause", "2 workers again", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  EXPECT_GT(Generation(resumed), Generation(paused));
}

// A job whose status the operator cannot read (a membership whose ranks have a gap: valid for the schema,
// not for the contract) gets an InvalidSpec event and is retried; the operator keeps serving other jobs.
TEST_F(OperatorE2eTest, UnreadableJobGetsAnEventWhileOtherJobsAreServed) {
  ApplyJob("odd", 1, 1);
  ASSERT_OK(Kubectl({"patch", "tj", "odd", "-n", ns_, "--subresource=status", "--type=merge", "-p",
                     R"({"status":{"membership":{"generation":1,"worldSize":1,"members":[{"pod":"x","rank":3}]}}})"}));
  BackgroundProcess* op = StartOperator();
  ApplyJob("fine", 1, 2);
  WaitForJob("fine", "2 workers", seconds(60), [](const json& j) { return WorldSize(j) == 2; });
  Status event = WaitFor("an InvalidSpec event on odd", seconds(30), [&](std::string* last) {
    auto r = cluster_.KubectlJson(
        {"get", "events", "-n", ns_, "--field-selector", "involvedObject.name=odd,reason=InvalidSpec"});
    if (r.ok()) *last = r->dump();
    return r.ok() && !(*r)["items"].empty() &&
           (*r)["items"][0].value("message", "").find("status.membership.members") != std::string::npos;
  });
  EXPECT_OK(event) << event;
  Status retried = WaitFor("a second attempt at odd", seconds(30), [&](std::string* last) {
    const std::string log = op->Log();
    const std::string line = "reconcile " + ns_ + "/odd failed (will retry)";
    *last = log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
    size_t first = log.find(line);
    return first != std::string::npos && log.find(line, first + 1) != std::string::npos;
  });
  EXPECT_OK(retried) << retried;
  EXPECT_TRUE(op->Running());
}

TEST_F(OperatorE2eTest, TwoReplicasElectOneLeaderAndTheStandbyTakesOver) {
  std::vector<std::string> le = {"--leader-elect",
                                 "--leader-election-namespace",
                                 ns_,
                                 "--leader-election-id",
                                 "ringmaster",
                                 "--lease-duration",
                                 "4s",
                                 "--renew-deadline",
                                 "3s",
                                 "--retry-period",
                                 "1s"};
  std::vector<std::string> a = le, b = le;
  a.insert(a.end(), {"--identity", "replica-a"});
  b.insert(b.end(), {"--identity", "replica-b"});
  BackgroundProcess* ra = StartOperator(a);
  BackgroundProcess* rb = StartOperator(b);
  std::string holder;
  ASSERT_TRUE(WaitFor("a lease holder", seconds(30), [&](std::string* last) {
                auto lease = cluster_.KubectlJson({"get", "lease", "ringmaster", "-n", ns_});
                if (!lease.ok()) return false;
                holder = (*lease)["spec"].value("holderIdentity", "");
                *last = holder;
                return holder == "replica-a" || holder == "replica-b";
              }).ok());
  std::this_thread::sleep_for(seconds(2));
  bool a_leads = ra->Log().find("replica-a is the leader") != std::string::npos;
  bool b_leads = rb->Log().find("replica-b is the leader") != std::string::npos;
  EXPECT_NE(a_leads, b_leads) << "exactly one replica must lead";
  ApplyJob("le", 1, 2);
  WaitForJob("le", "2 workers under the first leader", seconds(60), [](const json& j) { return WorldSize(j) == 2; });

  BackgroundProcess* leader = holder == "replica-a" ? ra : rb;
  std::string standby = holder == "replica-a" ? "replica-b" : "replica-a";
  auto start = Clock::now();
  leader->Kill();  // a crash: the lease is not released, so the standby waits out the lease
  ASSERT_TRUE(WaitFor("the standby to take the lease", seconds(30), [&](std::string*) {
                auto lease = cluster_.KubectlJson({"get", "lease", "ringmaster", "-n", ns_});
                return lease.ok() && (*lease)["spec"].value("holderIdentity", "") == standby;
              }).ok());
  double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(took, 4 + 6.0) << "handover took " << took << " s with a 4 s lease";
  ASSERT_OK(Kubectl({"scale", "-n", ns_, "tj/le", "--replicas=1"}));
  WaitForJob("le", "the new leader to act", seconds(60), [](const json& j) { return WorldSize(j) == 1; });
}

// spec.scheduling.gang under scheduler-plugins' Coscheduling scheduler (the test cluster runs it: cluster.sh --gang):
// two jobs of min 3 on a node of 4 GPUs, each of which fits alone but not both. A scheduler placing pods one by one can
// leave both holding GPUs below their minimum, neither training; the gang scheduler binds no pod of a job until 3 of
// them fit, so at no moment do both hold GPUs below their minimum, one trains, and the other gets the GPUs once the
// first is deleted.
TEST_F(OperatorE2eTest, GangJobsThatFitOnlyOneAtATimeNeverBothHoldGpusBelowTheirMinimum) {
  AddNode(ns_ + "-gang", 4);
  StartOperator();
  const std::string gang = "  scheduling: {gang: {timeoutSeconds: 5}}\n";
  ApplyJob("gang-a", 3, 3, gang, /*pool=*/true);
  ApplyJob("gang-b", 3, 3, gang, /*pool=*/true);

  // GPUs held: pods bound to the node (the scheduler's binding), not being deleted.
  auto held = [&]() {
    std::map<std::string, int> out{{"gang-a", 0}, {"gang-b", 0}};
    auto pods = cluster_.KubectlJson({"get", "pods", "-n", ns_, "-l", std::string(api::kJobNameLabel)});
    if (!pods.ok()) return out;
    for (const auto& p : (*pods)["items"]) {
      if (p["metadata"].contains("deletionTimestamp") || p["spec"].value("nodeName", "").empty()) continue;
      ++out[p["metadata"]["labels"].value(std::string(api::kJobNameLabel), "")];
    }
    return out;
  };
  std::string winner, violation;
  int samples = 0;
  const auto until = Clock::now() + seconds(20);
  // Past the winner's start, through more than one schedule timeout of the loser's group.
  std::optional<Clock::time_point> won_at;
  while (Clock::now() < until && (!won_at || Clock::now() < *won_at + seconds(8))) {
    auto h = held();
    ++samples;
    if (h["gang-a"] > 0 && h["gang-a"] < 3 && h["gang-b"] > 0 && h["gang-b"] < 3 && violation.empty())
      violation = "gang-a holds " + std::to_string(h["gang-a"]) + " GPUs and gang-b " + std::to_string(h["gang-b"]);
    for (const char* job : {"gang-a", "gang-b"}) {
      if (winner.empty() && WorldSize(Job(job)) == 3) {
        winner = job;
        won_at = Clock::now();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(violation.empty()) << "both jobs held GPUs below their minimum: " << violation;
  ASSERT_FALSE(winner.empty()) << "neither job started in 20 s";
  const std::string loser = winner == "gang-a" ? "gang-b" : "gang-a";
  const int loser_holds = held()[loser];
  EXPECT_EQ(loser_holds, 0) << loser << " holds GPUs it cannot train with";
  std::printf("%d samples; %s trained, %s waited holding %d GPUs\n", samples, winner.c_str(), loser.c_str(),
              loser_holds);
  auto group = cluster_.KubectlJson({"get", "podgroups.scheduling.x-k8s.io", loser, "-n", ns_});
  ASSERT_OK(group) << group.status();
  EXPECT_EQ((*group)["spec"].value("minMember", 0), 3) << group->dump();

  // The winner goes: the other gets the GPUs.
  auto deleted = cluster_.Kubectl({"delete", "tj", winner, "-n", ns_, "--wait=false"});
  ASSERT_COMMAND_OK(deleted);
  WaitForJob(loser, "the other job to start once the GPUs are free", seconds(60),
             [](const json& j) { return WorldSize(j) == 3; });
}

}  // namespace
}  // namespace ringmaster::testing
