// The path a user takes, end to end: image -> registry -> chart -> Deployment -> worker pods, on the local
// cluster's real nodes (kubelets on containerd). `helm install` puts the chart on the cluster with the operator
// image `make images` wrote and the ctest fixture pushed to the cluster's registry (cluster.images); the kubelets
// pull it and run the chart's two leader-elected replicas with their probes, and a TrainingJob's workers from the
// worker image. The job trains the C++ example through a worker's SIGKILL (through its node's containerd), a
// `kubectl scale` and the loss of the leading operator pod, and ends with the one-process weights and every sample
// once; the operators' generations are never lost or repeated. Then `helm upgrade` rolls the operator with the job
// untouched and `helm uninstall` leaves nothing of the release but the CRD.
// It prints the time from `helm install` to the operator Ready (a figure, not asserted).
#include <regex>

#include "tests/integration/elastic_workers_fixture.h"
#include "tests/support/real_nodes.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

const std::string kChart = std::string(RINGMASTER_SOURCE_DIR) + "/helm/ringmaster";

class HelmInstallE2eTest : public ElasticWorkersE2eTest {
 protected:
  // No operator process here: the chart's Deployment runs it on the real nodes.
  void StartOperator() override {
    release_ = UniqueName("rm");
    system_ns_ = CreateNamespace("rm-system");
    auto operator_image = RegistryImage(cluster_, "ringmaster-operator", RINGMASTER_IMAGE_TAG);
    ASSERT_OK(operator_image) << operator_image.status();
    operator_image_ = *operator_image;
    // Slower steps than the process e2e test: three disturbances (a kill, a scale, the leader's loss)
    // must land before the 120 steps end.
    *(std::find(workload_.args.begin(), workload_.args.end(), "--step-delay-ms") + 1) = "400";
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const std::string& ns : {system_ns_, ns_}) {
        auto pods = cluster_.Kubectl({"describe", "pods", "-n", ns});
        if (pods.ok()) std::cerr << "---- pods in " << ns << " ----\n" << pods->out << "\n";
      }
    }
    if (installed_) (void)Helm({"uninstall", release_, "-n", system_ns_, "--wait", "--timeout", "60s"});
    ElasticWorkersE2eTest::TearDown();
  }

  StatusOr<CommandResult> Helm(std::vector<std::string> args) {
    std::vector<std::string> argv = {cluster_.Get("HELM"), "--kubeconfig", cluster_.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(180));
  }

  // The chart's values for this cluster: the operator image in the cluster's registry, the real nodes, the
  // job's namespace, short leases so a takeover is quick.
  std::string WriteValues() {
    const std::string path = out_ + "/values.yaml";
    const std::string repository = operator_image_.substr(0, operator_image_.rfind(':'));
    std::ofstream(path) << "image: {repository: " << repository << ", tag: \"" << RINGMASTER_IMAGE_TAG
                        << "\", pullPolicy: IfNotPresent}\n"
                        << "watchNamespace: " << ns_ << "\n"
                        << "logFormat: text\n"
                        << "leaderElection: {enabled: true, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 1s}\n"
                        << RealNodePlacement(0);
    return path;
  }

  // The pod holding the leader-election Lease ("" when none does).
  std::string Leader() {
    auto lease = cluster_.KubectlJson({"get", "lease", Deployment(), "-n", system_ns_});
    if (!lease.ok()) return "";
    std::string holder = (*lease)["spec"].value("holderIdentity", "");
    return holder.substr(0, holder.find('_'));  // identities are <pod>_<suffix>
  }

  std::string Deployment() const { return release_ + "-ringmaster-operator"; }

  std::vector<std::string> OperatorPods() {
    std::vector<std::string> pods;
    auto list = cluster_.KubectlJson({"get", "pods", "-n", system_ns_, "-l", "app.kubernetes.io/instance=" + release_});
    if (list.ok())
      for (const auto& p : (*list)["items"])
        if (!p["metadata"].contains("deletionTimestamp")) pods.push_back(p["metadata"].value("name", ""));
    return pods;
  }

  // Every generation the operators announced for the job (the Events they record, one per generation).
  std::vector<int64_t> AnnouncedGenerations() {
    std::vector<int64_t> out;
    auto events = cluster_.KubectlJson({"get", "events", "-n", ns_, "--field-selector",
                                        "involvedObject.kind=TrainingJob,involvedObject.name=" + kJob});
    if (!events.ok()) return out;
    const std::regex generation("generation ([0-9]+),");
    for (const auto& e : (*events)["items"]) {
      const std::string message = e.value("message", "");
      std::smatch m;
      if (std::regex_search(message, m, generation)) out.push_back(std::stoll(m[1]));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // `helm install` of the chart and its two replicas Ready (their readiness probes run by the kubelets);
  // prints the time it took and sets *leader to the pod holding the lease.
  void Install(std::string* leader) {
    ASSERT_FALSE(cluster_.Get("HELM").empty()) << "cluster.env has no HELM: run make deps";
    const auto install_start = Clock::now();
    auto install = Helm({"install", release_, kChart, "-n", system_ns_, "-f", WriteValues()});
    ASSERT_OK(install);
    ASSERT_EQ(install->exit_code, 0) << install->out << install->err;
    installed_ = true;
    auto available = cluster_.Kubectl(
        {"wait", "-n", system_ns_, "deployment/" + Deployment(), "--for=condition=Available", "--timeout=240s"}, "",
        seconds(250));
    ASSERT_COMMAND_OK(available) << (available.ok() ? available->err : "");
    const double ready_s = std::chrono::duration<double>(Clock::now() - install_start).count();
    std::printf(
        "FIGURE helm install -> operator Ready on real nodes (Deployment Available, pulled from the registry): %.1f "
        "s\n",
        ready_s);
    Status elected = WaitFor("a leader among the chart's replicas", seconds(30), [&](std::string* last) {
      *leader = Leader();
      *last = *leader;
      return !leader->empty();
    });
    ASSERT_OK(elected) << elected;
    EXPECT_EQ(OperatorPods().size(), 2u);
  }

  std::string release_, system_ns_;
  std::string operator_image_;  // <registry>/ringmaster-operator:<tag>
  bool installed_ = false;
};

TEST_F(HelmInstallE2eTest, ImagesThroughTheChartSurviveAWorkerKillScaleLeaderLossUpgradeAndUninstall) {
  std::string leader;
  ASSERT_NO_FATAL_FAILURE(Install(&leader));

  // A job from the worker image: a worker killed, then scaled up, then the leading operator lost.
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  ASSERT_NO_FATAL_FAILURE(KillWorker(victim));
  WaitForMembershipEvent(std::set<std::string>{"WorkerFailed", "WorkerRemoved"}, 2);
  auto scaled = cluster_.Kubectl({"scale", "-n", ns_, "tj/" + kJob, "--replicas=4"});
  ASSERT_COMMAND_OK(scaled) << (scaled.ok() ? scaled->err : "");
  WaitForJob("a world of 4 workers", seconds(60),
             [](const json& j) { return Membership(j).value("worldSize", 0) == 4; });

  auto killed = cluster_.Kubectl({"delete", "pod", leader, "-n", system_ns_, "--wait=false"});
  ASSERT_COMMAND_OK(killed);
  std::string successor;
  Status handed_over = WaitFor("the standby to take the lease", seconds(60), [&](std::string* last) {
    successor = Leader();
    *last = successor;
    return !successor.empty() && successor != leader;
  });
  EXPECT_OK(handed_over) << handed_over;
  ExpectSucceededWithExactResults();

  // Generations: one per announced change, counted up by one, none lost or published twice across the handover.
  std::vector<int64_t> generations = AnnouncedGenerations();
  ASSERT_GE(generations.size(), 2u);
  for (size_t i = 1; i < generations.size(); ++i) {
    EXPECT_EQ(generations[i], generations[i - 1] + 1)
        << "generations announced: " << ::testing::PrintToString(generations);
  }
  EXPECT_EQ(generations.back(), Membership(Job()).value("generation", int64_t{0}));

  // `helm upgrade` with a changed value rolls the operator; the finished job is not touched.
  const json before = Job();
  auto upgrade = Helm({"upgrade", release_, kChart, "-n", system_ns_, "-f", WriteValues(), "--set", "workers=2"});
  ASSERT_OK(upgrade);
  ASSERT_EQ(upgrade->exit_code, 0) << upgrade->out << upgrade->err;
  auto rolled = cluster_.Kubectl(
      {"rollout", "status", "-n", system_ns_, "deployment/" + Deployment(), "--timeout=240s"}, "", seconds(250));
  EXPECT_COMMAND_OK(rolled) << (rolled.ok() ? rolled->out + rolled->err : "");
  auto deployment = cluster_.KubectlJson({"get", "deployment", Deployment(), "-n", system_ns_});
  ASSERT_OK(deployment);
  EXPECT_NE((*deployment)["spec"]["template"]["spec"]["containers"][0]["args"].dump().find("--workers=2"),
            std::string::npos);
  const json after = Job();
  EXPECT_EQ(after["metadata"].value("resourceVersion", ""), before["metadata"].value("resourceVersion", ""))
      << "the upgrade touched the job: " << after["status"].dump();

  // `helm uninstall` leaves nothing of the release; the CRD (and the jobs, with their own objects) stay.
  auto uninstall = Helm({"uninstall", release_, "-n", system_ns_, "--wait", "--timeout", "120s"});
  ASSERT_OK(uninstall);
  EXPECT_EQ(uninstall->exit_code, 0) << uninstall->out << uninstall->err;
  installed_ = false;
  for (const std::string kind : {"deployments", "services", "serviceaccounts", "configmaps", "roles", "rolebindings",
                                 "poddisruptionbudgets", "networkpolicies"}) {
    auto left = cluster_.KubectlJson({"get", kind, "-n", system_ns_, "-l", "app.kubernetes.io/instance=" + release_});
    ASSERT_OK(left);
    EXPECT_TRUE((*left)["items"].empty()) << kind << " left behind: " << (*left)["items"].dump();
  }
  // The operator's pods go once their kubelets have stopped them (SIGTERM, the operator's orderly shutdown):
  // `helm uninstall --wait` waits for the Deployment, not for its pods' graceful termination.
  Status pods_gone = WaitFor("the release's pods to terminate", seconds(60), [&](std::string* last) {
    auto left = cluster_.KubectlJson({"get", "pods", "-n", system_ns_, "-l", "app.kubernetes.io/instance=" + release_});
    if (!left.ok()) return false;
    *last = std::to_string((*left)["items"].size()) + " pods left";
    return (*left)["items"].empty();
  });
  EXPECT_OK(pods_gone) << pods_gone;
  for (const std::string kind : {"clusterroles", "clusterrolebindings"}) {
    auto left = cluster_.KubectlJson({"get", kind, "-l", "app.kubernetes.io/instance=" + release_});
    ASSERT_OK(left);
    EXPECT_TRUE((*left)["items"].empty()) << kind << " left behind";
  }
  EXPECT_COMMAND_OK(cluster_.Kubectl({"get", "crd", std::string(api::kCrdName)}));
}

// The PyTorch example (Horovod's elastic API) from the worker image, under the operator from its image: a
// worker SIGKILLed mid-run, and the job ends with the one-process weights, every sample once.
TEST_F(HelmInstallE2eTest, PyTorchExampleFromTheWorkerImageSurvivesAWorkerKill) {
  ASSERT_STRNE(RINGMASTER_PYTHON, "") << "built without the Python package (-DRINGMASTER_PYTHON=OFF): no reference run";
  std::string leader;
  ASSERT_NO_FATAL_FAILURE(Install(&leader));
  workload_ = PyTorchExample(WorkersOut(), ExamplesDir(), "digits_horovod_elastic.py");
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  ASSERT_NO_FATAL_FAILURE(KillWorker(victim));
  WaitForMembershipEvent(std::set<std::string>{"WorkerFailed", "WorkerRemoved"}, 2);
  ExpectSucceededWithExactResults();
}

}  // namespace
}  // namespace ringmaster::testing
