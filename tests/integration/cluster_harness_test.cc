// Proves the local control plane is real: the scheduler honours GPU limits on KWOK's fake GPU nodes,
// RBAC denies what it should, TokenRequest works, and KWOK's chaos stages fail pods and nodes on demand.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "base/status_test_macros.h"
#include "tests/support/cluster_test.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

class ClusterHarnessTest : public ClusterTest {
 protected:
  // Creates this test's namespace; the pod helpers below work in it.
  std::string CreateNamespace() {
    namespace_ = ClusterTest::CreateNamespace("harness");
    return namespace_;
  }

  static std::string GpuPod(const std::string& ns, const std::string& name, int gpus) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
           "\nspec:\n  containers:\n  - name: main\n    image: ringmaster.io/test-worker:none\n"
           "    resources:\n      limits:\n        nvidia.com/gpu: \"" +
           std::to_string(gpus) + "\"\n";
  }

  StatusOr<json> GetPod(const std::string& name) const {
    return cluster_.KubectlJson({"get", "pod", name, "-n", namespace_});
  }

  // Waits until pod `name` reports phase `phase`; returns the pod as last seen.
  json WaitForPhase(const std::string& name, const std::string& phase, seconds timeout) {
    json pod;
    Status s = WaitFor("pod " + name + " to be " + phase, timeout, [&](std::string* last) {
      auto p = GetPod(name);
      if (!p.ok()) {
        *last = p.status().ToString();
        return false;
      }
      pod = *p;
      *last = pod["status"].dump();
      return pod["status"].value("phase", "") == phase;
    });
    EXPECT_OK(s) << s;
    return pod;
  }

  static std::string NodeReadyStatus(const json& node) {
    for (const auto& c : node["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready") return c.value("status", "");
    }
    return "";
  }

  std::string namespace_;
};

TEST_F(ClusterHarnessTest, ServerReportsThePinnedKubernetesVersion) {
  auto v = cluster_.KubectlJson({"version"});
  ASSERT_OK(v) << v.status();
  EXPECT_EQ((*v)["serverVersion"].value("gitVersion", ""), cluster_.Get("KUBERNETES_VERSION"));
}

TEST_F(ClusterHarnessTest, DefaultFakeGpuNodesAreReadyWithGpus) {
  auto nodes = cluster_.KubectlJson({"get", "nodes", "-l", "ringmaster.io/default-node=true"});
  ASSERT_OK(nodes) << nodes.status();
  ASSERT_EQ((*nodes)["items"].size(), std::stoul(cluster_.Get("DEFAULT_NODES")));
  for (const auto& node : (*nodes)["items"]) {
    EXPECT_EQ(node["metadata"]["annotations"].value("kwok.x-k8s.io/node", ""), "fake");
    EXPECT_EQ(node["status"]["allocatable"].value("nvidia.com/gpu", ""), cluster_.Get("DEFAULT_GPUS_PER_NODE"));
    EXPECT_EQ(NodeReadyStatus(node), "True") << node["metadata"]["name"];
  }
}

TEST_F(ClusterHarnessTest, GpuPodLandsOnFakeGpuNodeWithLoopbackIp) {
  std::string ns = CreateNamespace();
  ASSERT_OK(cluster_.Apply(GpuPod(ns, "one-gpu", 1)));
  json pod = WaitForPhase("one-gpu", "Running", seconds(60));
  std::string node = pod["spec"].value("nodeName", "");
  ASSERT_FALSE(node.empty());
  auto n = cluster_.KubectlJson({"get", "node", node});
  ASSERT_OK(n) << n.status();
  EXPECT_EQ((*n)["metadata"]["annotations"].value("kwok.x-k8s.io/node", ""), "fake");
  std::string ip = pod["status"].value("podIP", "");
  EXPECT_EQ(ip.rfind("127.", 0), 0u) << "pod IP " << ip << " is not a loopback address";
  EXPECT_EQ(ip.rfind(cluster_.Get("POD_IP_PREFIX"), 0), 0u) << ip;
}

TEST_F(ClusterHarnessTest, PodAskingForMoreGpusThanAnyNodeStaysUnschedulable) {
  std::string ns = CreateNamespace();
  int too_many = std::stoi(cluster_.Get("DEFAULT_GPUS_PER_NODE")) + 1;
  ASSERT_OK(cluster_.Apply(GpuPod(ns, "greedy", too_many)));
  json scheduled;
  Status s = WaitFor("pod greedy to be marked Unschedulable", seconds(60), [&](std::string* last) {
    auto p = GetPod("greedy");
    if (!p.ok()) return false;
    for (const auto& c : (*p)["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled") scheduled = c;
    }
    *last = (*p)["status"].dump();
    return scheduled.value("reason", "") == "Unschedulable";
  });
  ASSERT_OK(s) << s;
  EXPECT_EQ(scheduled.value("status", ""), "False");
  EXPECT_NE(scheduled.value("message", "").find("nvidia.com/gpu"), std::string::npos) << scheduled.dump();
  auto p = GetPod("greedy");
  ASSERT_OK(p);
  EXPECT_EQ((*p)["status"].value("phase", ""), "Pending");
  EXPECT_FALSE((*p)["spec"].contains("nodeName"));
}

TEST_F(ClusterHarnessTest, ServiceAccountTokenWithoutPermissionGets403) {
  std::string ns = CreateNamespace();
  auto created = cluster_.Kubectl({"create", "serviceaccount", "nobody", "-n", ns});
  ASSERT_COMMAND_OK(created);
  // TokenRequest: needs the apiserver's service-account signing key.
  auto token = cluster_.Kubectl({"create", "token", "nobody", "-n", ns, "--duration=10m"});
  ASSERT_COMMAND_OK(token) << (token.ok() ? token->err : token.status().ToString());
  std::string bearer = token->out.substr(0, token->out.find_last_not_of("\n") + 1);
  ASSERT_FALSE(bearer.empty());

  auto curl = [&](const std::vector<std::string>& extra, const std::string& path) {
    std::vector<std::string> argv = {
        "curl", "-sS", "--cacert", cluster_.ca_file(), "-H", "Authorization: Bearer " + bearer, "-w", "\n%{http_code}"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(cluster_.server() + path);
    return RunCommand(argv, seconds(30));
  };
  auto split = [](const std::string& out) {
    auto nl = out.find_last_of('\n');
    return std::make_pair(out.substr(0, nl), out.substr(nl + 1));
  };

  // The token authenticates: the apiserver tells it who it is.
  auto who = curl({"-X", "POST", "-H", "Content-Type: application/json", "-d",
                   R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})"},
                  "/apis/authentication.k8s.io/v1/selfsubjectreviews");
  ASSERT_COMMAND_OK(who) << (who.ok() ? who->err : who.status().ToString());
  auto [who_body, who_code] = split(who->out);
  EXPECT_EQ(who_code, "201") << who_body;
  EXPECT_NE(who_body.find("system:serviceaccount:" + ns + ":nobody"), std::string::npos) << who_body;

  // ... but RBAC grants it nothing: listing pods is a real 403 with reason Forbidden.
  auto denied = curl({}, "/api/v1/namespaces/" + ns + "/pods");
  ASSERT_COMMAND_OK(denied) << (denied.ok() ? denied->err : denied.status().ToString());
  auto [body, code] = split(denied->out);
  EXPECT_EQ(code, "403") << body;
  json status = json::parse(body, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << body;
  EXPECT_EQ(status.value("reason", ""), "Forbidden");
}

TEST_F(ClusterHarnessTest, PodFailsOnDemandThroughKwokChaosStage) {
  std::string ns = CreateNamespace();
  ASSERT_OK(cluster_.Apply(GpuPod(ns, "doomed", 1)));
  WaitForPhase("doomed", "Running", seconds(60));
  auto a = cluster_.Kubectl(
      {"annotate", "pod", "doomed", "-n", ns, "pod-container-running-failed.stage.kwok.x-k8s.io/exit-code=42"});
  ASSERT_COMMAND_OK(a);
  auto l =
      cluster_.Kubectl({"label", "pod", "doomed", "-n", ns, "pod-container-running-failed.stage.kwok.x-k8s.io=true"});
  ASSERT_COMMAND_OK(l);
  json pod = WaitForPhase("doomed", "Failed", seconds(60));
  const json& terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated.value("exitCode", -1), 42) << pod["status"].dump();
}

TEST_F(ClusterHarnessTest, NodeMadeNotReadyStaysNotReadyUntilReleased) {
  std::string node = UniqueName("chaos-node");
  std::string manifest = "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + node +
                         "\n  annotations:\n    kwok.x-k8s.io/node: fake\n  labels:\n    type: kwok\n"
                         // Tainted: no other test's pod may land on a node this test makes NotReady.
                         "spec:\n  taints: [{key: ringmaster.io/chaos-node, value: \"true\", effect: NoSchedule}]\n"
                         "status:\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n"
                         "  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n";
  ASSERT_OK(cluster_.Apply(manifest));
  auto ready_is = [&](const std::string& want) {
    return [&, want](std::string* last) {
      auto n = cluster_.KubectlJson({"get", "node", node});
      if (!n.ok()) return false;
      *last = NodeReadyStatus(*n);
      return *last == want;
    };
  };
  ASSERT_OK(WaitFor("node " + node + " Ready", seconds(60), ready_is("True")));
  auto l = cluster_.Kubectl({"label", "node", node, "node-not-ready.stage.kwok.x-k8s.io=true"});
  ASSERT_COMMAND_OK(l);
  Status s = WaitFor("node " + node + " NotReady", seconds(60), ready_is("False"));
  ASSERT_OK(s) << s;
  // It stays NotReady across several of KWOK's heartbeats (every few seconds in our stages).
  Status flipped = WaitFor("node " + node + " to flip back to Ready", seconds(15), ready_is("True"));
  EXPECT_EQ(flipped.code(), StatusCode::kDeadlineExceeded) << "a chaos-labelled node became Ready again";
  // Releasing the chaos label lets KWOK initialize it again.
  auto u = cluster_.Kubectl({"label", "node", node, "node-not-ready.stage.kwok.x-k8s.io-"});
  ASSERT_COMMAND_OK(u);
  EXPECT_OK(WaitFor("node " + node + " Ready again", seconds(60), ready_is("True")));
  (void)cluster_.Kubectl({"delete", "node", node, "--wait=false"});
}

// cluster.sh's lifecycle: `up` on a healthy cluster reuses it, a second cluster runs beside the first,
// a half-running one is refused with advice, and `down` leaves no process behind and can run twice.
class ClusterLifecycleTest : public ClusterHarnessTest {
 protected:
  const std::string script_ = std::string(RINGMASTER_SOURCE_DIR) + "/tests/harness/cluster/cluster.sh";

  StatusOr<CommandResult> Script(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {script_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(240));
  }

  // Processes whose command line names `dir`.
  static int ProcessesIn(const std::string& dir) {
    auto r = RunCommand({"pgrep", "-c", "-f", dir + "/"});
    return r.ok() ? std::atoi(r->out.c_str()) : -1;
  }
};

TEST_F(ClusterLifecycleTest, UpOnTheRunningTestClusterReusesIt) {
  auto r = Script({"up", "--dir", cluster_.dir()});
  ASSERT_OK(r) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->err.find("reusing it"), std::string::npos) << r->err;
}

TEST_F(ClusterLifecycleTest, SecondClusterRunsBesideAndStopsCleanly) {
  std::string dir = ::testing::TempDir() + UniqueName("second-cluster");
  auto up = Script({"up", "--dir", dir, "--nodes", "1", "--gpus-per-node", "2"});
  ASSERT_OK(up) << up.status();
  ASSERT_EQ(up->exit_code, 0) << up->err;
  EXPECT_GE(ProcessesIn(dir), 5);

  // Its apiserver is not ours: different port, its own single node.
  auto nodes = RunCommand({cluster_.Get("KUBECTL"), "--kubeconfig", dir + "/kubeconfig", "get", "nodes", "-o", "name"});
  ASSERT_COMMAND_OK(nodes) << (nodes.ok() ? nodes->err : nodes.status().ToString());
  EXPECT_EQ(nodes->out, "node/ringmaster-gpu-0\n");

  // Kill one component: the cluster is half-running, and `up` refuses it with advice.
  auto kill = RunCommand({"pkill", "-f", "kube-scheduler.*" + dir + "/"});
  ASSERT_COMMAND_OK(kill);
  Status gone = WaitFor("the scheduler to exit", seconds(30), [&](std::string*) {
    auto r = RunCommand({"pgrep", "-f", "kube-scheduler.*" + dir + "/"});
    return r.ok() && r->exit_code == 1;
  });
  ASSERT_OK(gone) << gone;
  auto refused = Script({"up", "--dir", dir});
  ASSERT_OK(refused);
  EXPECT_NE(refused->exit_code, 0);
  EXPECT_NE(refused->err.find("half-running cluster"), std::string::npos) << refused->err;
  EXPECT_NE(refused->err.find("down --dir"), std::string::npos) << refused->err;

  for (int i = 0; i < 2; ++i) {
    auto down = Script({"down", "--dir", dir});
    ASSERT_OK(down);
    EXPECT_EQ(down->exit_code, 0) << down->err;
    EXPECT_EQ(ProcessesIn(dir), 0);
  }
  // The test cluster was not touched.
  auto v = cluster_.KubectlJson({"version"});
  EXPECT_OK(v) << v.status();
}

}  // namespace
}  // namespace ringmaster::testing
