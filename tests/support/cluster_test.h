// ClusterTest: the base fixture for tests against the local control plane. It fetches the cluster the
// ctest fixture started, creates namespaces of the test's own (deleted afterwards, without waiting),
// adds fake GPU nodes of the test's own pool (deleted afterwards), and installs the TrainingJob CRD on
// request.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "tests/support/manifests.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::testing {

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = TestCluster::FromEnvironment();
    ASSERT_OK(cluster) << cluster.status();
    cluster_ = std::move(cluster).value();
  }

  void TearDown() override {
    for (const auto& ns : namespaces_) (void)cluster_.Kubectl({"delete", "namespace", ns, "--wait=false"});
    for (const auto& node : pool_nodes_) (void)cluster_.Kubectl({"delete", "node", node, "--wait=false"});
  }

  // A KWOK node with `gpus` nvidia.com/gpu in the test's own pool: labelled and tainted (NoSchedule)
  // ringmaster.io/test-pool=<pool>, so only pods placed there with PoolPlacement(pool) run on it and a
  // test that loses or deletes its nodes never disturbs the pods of tests running alongside.
  void AddPoolNode(const std::string& name, const std::string& pool, int gpus) {
    pool_nodes_.push_back(name);
    const std::string g = std::to_string(gpus);
    Status s = cluster_.Apply("apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
                              "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {type: kwok, " + kPoolKey + ": " +
                              pool + "}\nspec:\n  taints: [{key: " + kPoolKey + ", value: " + pool +
                              ", effect: NoSchedule}]\n"
                              "status:\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"" +
                              g +
                              "\"}\n"
                              "  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"" +
                              g + "\"}\n");
    ASSERT_OK(s) << s;
  }

  // The pod-spec fields (YAML, each line indented by `indent` spaces) that place a pod in `pool`.
  static std::string PoolPlacement(const std::string& pool, int indent) {
    const std::string pad(static_cast<size_t>(indent), ' ');
    return pad + "nodeSelector: {" + kPoolKey + ": " + pool + "}\n" + pad + "tolerations: [{key: " + kPoolKey +
           ", operator: Equal, value: " + pool + ", effect: NoSchedule}]\n";
  }

  // Creates a namespace named `<prefix>-<pid>-<n>` and waits for its default ServiceAccount, which
  // pods need; returns its name ("" after a failed assertion).
  std::string CreateNamespace(const std::string& prefix) {
    std::string ns = UniqueName(prefix);
    auto r = cluster_.Kubectl({"create", "namespace", ns});
    EXPECT_COMMAND_OK(r);
    namespaces_.push_back(ns);
    Status sa = WaitFor("the default ServiceAccount in " + ns, std::chrono::seconds(30), [&](std::string* last) {
      auto got = cluster_.Kubectl({"get", "serviceaccount", "default", "-n", ns});
      if (got.ok()) *last = got->err;
      return got.ok() && got->ok();
    });
    EXPECT_OK(sa) << sa;
    return ns;
  }

  // Installs crds/ringmaster.io_trainingjobs.yaml (idempotent, safe in parallel).
  void EnsureTrainingJobCrd() {
    Status crd = cluster_.EnsureCrd(ringmaster::testing::TrainingJobCrdPath(), std::string(api::kCrdName));
    ASSERT_OK(crd) << crd;
  }

  TestCluster cluster_;

 private:
  static constexpr char kPoolKey[] = "ringmaster.io/test-pool";
  std::vector<std::string> namespaces_;
  std::vector<std::string> pool_nodes_;
};

// JobTest: a ClusterTest about TrainingJobs. SetUp installs the CRD and gives the test a namespace of its
// own, ns_, named after `prefix`.
class JobTest : public ClusterTest {
 protected:
  explicit JobTest(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    EnsureTrainingJobCrd();
    ns_ = CreateNamespace(prefix_);
  }

  // Applies TrainingJob `name` in ns_ with `spec` (YAML lines under spec:, indented two spaces) and one
  // trainer container asking for a GPU; returns the job as stored, with its uid (null after a failure).
  nlohmann::json ApplyJob(const std::string& name, const std::string& spec) {
    const std::string manifest = TrainingJobHead() + "metadata:\n  name: " + name + "\n  namespace: " + ns_ +
                                 "\nspec:\n" + spec +
                                 "  template:\n    spec:\n      containers:\n"
                                 "      - name: trainer\n        image: example/trainer:1\n"
                                 "        resources: {limits: {nvidia.com/gpu: 1}}\n";
    EXPECT_OK(cluster_.Apply(manifest));
    auto job = cluster_.KubectlJson({"get", std::string(api::kShortName), name, "-n", ns_});
    EXPECT_OK(job);
    return job.ok() ? *job : nlohmann::json();
  }

  std::string ns_;

 private:
  const std::string prefix_;
};

}  // namespace ringmaster::testing
