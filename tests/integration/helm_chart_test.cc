// The Helm chart on the real control plane: it lints, installs (CRD, RBAC, a leader-elected Deployment,
// metrics Service, dashboard), its Deployment becomes Available on KWOK nodes, and — the point — the
// ClusterRole it grants is enough for ringmaster-operator to run a job: the real operator binary,
// authenticated only as the chart's service account, publishes a membership and creates the per-job RBAC.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/manifests.h"
#include "support/background_process.h"
#include "support/cluster_test.h"
#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

const std::string kChart = std::string(RINGMASTER_SOURCE_DIR) + "/helm/ringmaster";

class HelmChartTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    EnsureTrainingJobCrd();
    release_ = UniqueName("rm");
    system_ns_ = CreateNamespace("rm-system");
    jobs_ns_ = CreateNamespace("rm-jobs");
  }
  void TearDown() override {
    (void)Helm({"uninstall", release_, "-n", system_ns_});
    ClusterTest::TearDown();
  }

  StatusOr<CommandResult> Helm(std::vector<std::string> args) {
    std::vector<std::string> argv = {cluster_.Get("HELM"), "--kubeconfig", cluster_.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(120));
  }

  std::string release_, system_ns_, jobs_ns_;
};

TEST_F(HelmChartTest, ChartLintsAndRendersForThisKubernetes) {
  ASSERT_FALSE(cluster_.Get("HELM").empty()) << "cluster.env has no HELM: run make deps";
  auto lint = Helm({"lint", kChart});
  ASSERT_OK(lint);
  EXPECT_EQ(lint->exit_code, 0) << lint->out << lint->err;
  auto rendered = Helm({"template", "r", kChart, "--kube-version", cluster_.Get("KUBERNETES_VERSION")});
  ASSERT_COMMAND_OK(rendered) << (rendered.ok() ? rendered->err : "");
  for (const char* kind : {"kind: ClusterRole\n", "kind: Deployment\n", "kind: Service\n", "kind: ConfigMap\n"}) {
    EXPECT_NE(rendered->out.find(kind), std::string::npos) << kind;
  }
  EXPECT_NE(rendered->out.find("--leader-elect"), std::string::npos);
}

TEST_F(HelmChartTest, InstalledRbacIsEnoughForTheOperatorToRunAJob) {
  auto install = Helm({"install", release_, kChart, "-n", system_ns_, "--set", "image.tag=test", "--set",
                       "watchNamespace=" + jobs_ns_});
  ASSERT_OK(install);
  ASSERT_EQ(install->exit_code, 0) << install->out << install->err;
  const std::string deploy = release_ + "-ringmaster-operator";
  auto available = cluster_.Kubectl({"wait", "-n", system_ns_, "deployment/" + deploy, "--for=condition=Available",
                                     "--timeout=60s"}, "", seconds(70));
  ASSERT_OK(available);
  EXPECT_EQ(available->exit_code, 0) << available->err;

  // The operator, authenticated only as the chart's service account.
  auto token = cluster_.Kubectl({"create", "token", deploy, "-n", system_ns_, "--duration=1h"});
  ASSERT_COMMAND_OK(token) << (token.ok() ? token->err : "");
  const std::string kubeconfig = ::testing::TempDir() + release_ + ".kubeconfig";
  {
    std::ifstream ca_in(cluster_.ca_file());
    std::ofstream out(kubeconfig);
    out << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " << cluster_.server()
        << "\n    certificate-authority: " << cluster_.ca_file() << "\nusers:\n- name: sa\n  user:\n    token: "
        << token->out.substr(0, token->out.find('\n')) << "\ncontexts:\n- name: c\n  context: {cluster: c, user: sa}\n"
        << "current-context: c\n";
  }
  BackgroundProcess op;
  ASSERT_OK(op.Start({RINGMASTER_OPERATOR_BIN, "--kubeconfig", kubeconfig, "--namespace", jobs_ns_, "--leader-elect",
                        "--leader-election-namespace", system_ns_, "--leader-election-id", deploy,
                        "--metrics-bind-address", "0", "--health-probe-bind-address", "0"},
                       ::testing::TempDir() + release_ + "-operator.log")
                  );
  ASSERT_OK(cluster_
                  .Apply(ringmaster::testing::TrainingJobHead() + "metadata: {name: charted, namespace: " +
                         jobs_ns_ +
                         "}\nspec:\n  replicas: {min: 2, max: 2}\n  elasticPolicy: {joinBatchWindowSeconds: 1}\n"
                         "  template:\n    spec:\n      containers:\n      - {name: t, image: example/trainer:1, "
                         "resources: {limits: {nvidia.com/gpu: 1}}}\n")
                  );
  Status published = WaitFor("a membership published under the chart's RBAC", seconds(90), [&](std::string* last) {
    auto job = cluster_.KubectlJson({"get", "tj", "charted", "-n", jobs_ns_});
    if (!job.ok()) return false;
    const json status = job->value("status", json::object());
    *last = status.dump();
    return status.value("membership", json::object()).value("worldSize", 0) == 2;
  });
  EXPECT_OK(published) << published << "\n" << op.Log();
  auto role = cluster_.Kubectl({"get", "role", "charted-worker", "-n", jobs_ns_});
  EXPECT_COMMAND_OK(role) << "the per-job Role was not created";
  EXPECT_EQ(op.Log().find("forbidden"), std::string::npos) << op.Log();
  op.Stop();
}

}  // namespace
}  // namespace ringmaster::testing
