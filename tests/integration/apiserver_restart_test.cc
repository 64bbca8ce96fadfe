// An informer survives an apiserver restart: its watch breaks while the apiserver is down, resumes (or
// relists) when it is back, and afterwards its cache equals a fresh list — including the changes made
// right after the restart. The test restarts the shared test cluster's apiserver, so ctest runs it
// alone (RUN_SERIAL).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/status_test_macros.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "kube/resource.h"
#include "tests/support/cluster_test.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
namespace kube = ringmaster::kube;

json ConfigMap(const std::string& ns, const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", {{"v", value}}}};
}

// name -> data.v of every ConfigMap whose name starts with "cm-".
std::map<std::string, std::string> Contents(const std::vector<json>& items) {
  std::map<std::string, std::string> out;
  for (const auto& cm : items) {
    std::string name = kube::NameOf(cm);
    if (name.rfind("cm-", 0) == 0) out[name] = cm.value("data", json::object()).value("v", "");
  }
  return out;
}

class ApiserverRestartTest : public ClusterTest {};

TEST_F(ApiserverRestartTest, InformerCacheEqualsAFreshListAfterTheRestart) {
  std::string ns = CreateNamespace("restart");
  auto config = kube::LoadConfig(cluster_.kubeconfig(), "", kube::ProcessEnvironment());
  ASSERT_OK(config) << config.status();
  auto client = kube::NewClient(*config);
  ASSERT_OK(client) << client.status();
  for (int i = 0; i < 5; ++i)
    ASSERT_OK((*client)->Create(kube::resources::ConfigMaps(), ns, ConfigMap(ns, "cm-" + std::to_string(i), "before")));

  kube::InformerOptions options;
  options.ns = ns;
  options.max_backoff = std::chrono::seconds(1);  // retry quickly while the apiserver is away
  kube::Informer informer(*client, kube::resources::ConfigMaps(), options);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(20)));
  // The watch follows the list asynchronously: restart only once it is open.
  ASSERT_OK(
      WaitFor("the informer's watch to open", seconds(20), [&](std::string*) { return informer.watches() >= 1; }));

  auto restart = RunCommand({std::string(RINGMASTER_SOURCE_DIR) + "/tests/harness/cluster/cluster.sh", "restart",
                             "--dir", cluster_.dir(), "kube-apiserver"},
                            seconds(120));
  ASSERT_COMMAND_OK(restart) << (restart.ok() ? restart->err : restart.status().ToString());

  // Changes right after the restart: an update, a delete and a create.
  auto cm0 = (*client)->Get(kube::resources::ConfigMaps(), ns, "cm-0");
  ASSERT_OK(cm0) << cm0.status();
  json updated = *cm0;
  updated["data"]["v"] = "after";
  ASSERT_OK((*client)->Update(kube::resources::ConfigMaps(), ns, updated));
  ASSERT_OK((*client)->Delete(kube::resources::ConfigMaps(), ns, "cm-1"));
  ASSERT_OK((*client)->Create(kube::resources::ConfigMaps(), ns, ConfigMap(ns, "cm-9", "after")));

  std::map<std::string, std::string> listed, cached;
  Status converged = WaitFor("the cache to equal a fresh list", seconds(60), [&](std::string* last) {
    auto list = (*client)->ListAll(kube::resources::ConfigMaps(), ns);
    if (!list.ok()) return false;
    listed = Contents((*list)["items"].get<std::vector<json>>());
    std::vector<json> items;
    for (const auto& obj : informer.store().List()) items.push_back(*obj);
    cached = Contents(items);
    *last = "cache has " + std::to_string(cached.size()) + " of " + std::to_string(listed.size());
    return cached == listed;
  });
  EXPECT_OK(converged) << converged;
  EXPECT_EQ(listed.size(), 5u);
  EXPECT_EQ(cached["cm-0"], "after");
  EXPECT_EQ(cached.count("cm-1"), 0u);
  EXPECT_EQ(cached["cm-9"], "after");
  EXPECT_GE(informer.watches(), 2) << "the watch should have been re-established";
  informer.Stop();
}

}  // namespace
}  // namespace ringmaster::testing
