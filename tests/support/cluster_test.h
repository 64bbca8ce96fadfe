// ClusterTest: the base fixture for tests against the local control plane. It fetches the cluster the
// ctest fixture started, creates namespaces of the test's own (deleted afterwards, without waiting),
// and installs the TrainingJob CRD on request.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_cluster.h"

namespace ringmaster::testing {

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = TestCluster::FromEnvironment();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
  }

  void TearDown() override {
    for (const auto& ns : namespaces_) (void)cluster_.Kubectl({"delete", "namespace", ns, "--wait=false"});
  }

  // Creates a namespace named `<prefix>-<pid>-<n>` and waits for its default ServiceAccount, which
  // pods need; returns its name ("" after a failed assertion).
  std::string CreateNamespace(const std::string& prefix) {
    std::string ns = UniqueName(prefix);
    auto r = cluster_.Kubectl({"create", "namespace", ns});
    EXPECT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->err : r.status().ToString());
    namespaces_.push_back(ns);
    Status sa = WaitFor("the default ServiceAccount in " + ns, std::chrono::seconds(30), [&](std::string* last) {
      auto got = cluster_.Kubectl({"get", "serviceaccount", "default", "-n", ns});
      if (got.ok()) *last = got->err;
      return got.ok() && got->ok();
    });
    EXPECT_TRUE(sa.ok()) << sa;
    return ns;
  }

  // Installs crds/ringmaster.io_trainingjobs.yaml (idempotent, safe in parallel).
  void EnsureTrainingJobCrd() {
    Status crd = cluster_.EnsureCrd(std::string(RINGMASTER_SOURCE_DIR) + "/crds/ringmaster.io_trainingjobs.yaml",
                                    "trainingjobs.ringmaster.io");
    ASSERT_TRUE(crd.ok()) << crd;
  }

  TestCluster cluster_;

 private:
  std::vector<std::string> namespaces_;
};

}  // namespace ringmaster::testing
