// The path a user takes, end to end: image -> chart -> Deployment -> worker pods. `helm install` puts the
// chart on the local cluster with the operator image `make images` wrote; the pod runner (image mode)
// runs the chart's two leader-elected replicas from that image, with their probes, and a TrainingJob's
// workers from the worker image. The job trains the C++ example through a worker's SIGKILL, a
// `kubectl scale` and the loss of the leading operator pod, and ends with the one-process weights and
// every sample once; the operators' generations are never lost or repeated. Then `helm upgrade` rolls the
// operator with the job untouched and `helm uninstall` leaves nothing of the release but the CRD.
// It prints the time from `helm install` to the operator Ready (a figure, not asserted).
#include <regex>

#include "tests/integration/elastic_workers_fixture.h"
#include "tests/pod_runner/oci_image.h"
#include "tests/pod_runner/rootfs_cache.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

const std::string kChart = std::string(RINGMASTER_SOURCE_DIR) + "/helm/ringmaster";

class HelmInstallE2eTest : public ElasticWorkersE2eTest {
 protected:
  void StartOperatorAndRunner() override {
    release_ = UniqueName("rm");
    system_ns_ = CreateNamespace("rm-system");
    ASSERT_TRUE(std::filesystem::exists(std::string(RINGMASTER_IMAGES_DIR) + "/ringmaster-operator.tar"))
        << "no operator image in " << RINGMASTER_IMAGES_DIR << ": run `make images` (make test does)";
    // The operator's pods: every pod of the release in its namespace, from the images directory.
    auto operators = StartImageRunner(system_ns_, "app.kubernetes.io/instance=" + release_, "operator-pods");
    ASSERT_OK(operators) << operators.status();
    operator_runner_ = std::move(operators).value();
    // The workers: the job's pods, from the worker image; their output directory is a hostPath the
    // worker's user (1000) may write.
    auto workers = StartImageRunner(ns_, "", "worker-pods");
    ASSERT_OK(workers) << workers.status();
    runner_ = std::move(workers).value();
    std::filesystem::permissions(out_ + "/train", std::filesystem::perms::all);
    image_ = std::string("ringmaster-worker:") + RINGMASTER_IMAGE_TAG;
    // A new worker image is unpacked once (minutes for its GBs): done here, before the job, so its
    // pods start as they would on a node that has pulled the image.
    auto worker_image = FindLocalImage(RINGMASTER_IMAGES_DIR, image_);
    ASSERT_OK(worker_image) << worker_image.status();
    auto rootfs = EnsureRootfs(*worker_image, DefaultRootfsCacheDir(),
                               [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    ASSERT_OK(rootfs) << rootfs.status();
    worker_rootfs_ = std::move(rootfs).value();
    workload_ = TrainExample("/out");
    // Slower steps than the process e2e test: three disturbances (a kill, a scale, the leader's loss)
    // must land before the 120 steps end.
    *(std::find(workload_.args.begin(), workload_.args.end(), "--step-delay-ms") + 1) = "400";
    pod_extra_ = "      volumes: [{name: out, hostPath: {path: " + out_ + "/train, type: Directory}}]\n";
    container_extra_ = "        volumeMounts: [{name: out, mountPath: /out}]\n";
    template_metadata_ = "    metadata: {annotations: {" + std::string(kProbedReadinessAnnotation) + ": " +
                         kProbedReadinessValue + "}}\n";
  }

  StatusOr<std::unique_ptr<PodRunner>> StartImageRunner(const std::string& ns, const std::string& selector,
                                                        const std::string& dir) {
    PodRunnerOptions ro;
    ro.kubeconfig = cluster_.kubeconfig();
    ro.ns = ns;
    ro.job = kJob;
    ro.label_selector = selector;
    ro.image_dir = RINGMASTER_IMAGES_DIR;
    ro.work_dir = out_ + "/" + dir;
    ro.start_timeout = seconds(60);
    return PodRunner::Start(ro);
  }

  void TearDown() override {
    if (operator_runner_) {
      if (HasFailure()) std::cerr << operator_runner_->Describe() << "\n";
      operator_runner_->Stop();
    }
    if (installed_) (void)Helm({"uninstall", release_, "-n", system_ns_, "--wait", "--timeout", "60s"});
    ElasticWorkersE2eTest::TearDown();
  }

  StatusOr<CommandResult> Helm(std::vector<std::string> args) {
    std::vector<std::string> argv = {cluster_.Get("HELM"), "--kubeconfig", cluster_.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(180));
  }

  // The chart's values for this cluster: the images of `make images`, this test's nodes, the job's
  // namespace, readiness from the runner's probes, short leases so a takeover is quick.
  std::string WriteValues() {
    const std::string path = out_ + "/values.yaml";
    std::ofstream(path) << "image: {repository: localhost/ringmaster-operator, tag: \"" << RINGMASTER_IMAGE_TAG
                        << "\", pullPolicy: IfNotPresent}\n"
                        << "watchNamespace: " << ns_ << "\n"
                        << "logFormat: text\n"
                        << "listenOnPodIP: true\n"
                        << "leaderElection: {enabled: true, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 1s}\n"
                        << "podAnnotations: {" << kProbedReadinessAnnotation << ": " << kProbedReadinessValue << "}\n"
                        << PoolPlacement(ns_, 0);
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

  // `helm install` of the chart and its two replicas Ready (their readiness probes run by the runner);
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
    std::printf("FIGURE helm install -> operator Ready (Deployment Available, from the image): %.1f s\n", ready_s);
    Status elected = WaitFor("a leader among the chart's replicas", seconds(30), [&](std::string* last) {
      *leader = Leader();
      *last = *leader;
      return !leader->empty();
    });
    ASSERT_OK(elected) << elected;
    EXPECT_EQ(OperatorPods().size(), 2u);
  }

  std::string release_, system_ns_;
  std::unique_ptr<PodRunner> operator_runner_;
  RootfsLease worker_rootfs_;  // the unpacked worker image, held for the test (rootfs_cache.h)
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
  ASSERT_OK(runner_->Signal(victim, SIGKILL)) << victim;
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
                                 "poddisruptionbudgets", "networkpolicies", "pods"}) {
    auto left = cluster_.KubectlJson({"get", kind, "-n", system_ns_, "-l", "app.kubernetes.io/instance=" + release_});
    ASSERT_OK(left);
    EXPECT_TRUE((*left)["items"].empty()) << kind << " left behind: " << (*left)["items"].dump();
  }
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
  workload_ = PyTorchExample("/out", "digits_horovod_elastic.py");
  workload_.command = {"python", "/opt/ringmaster/examples/python/digits_horovod_elastic.py"};
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  ASSERT_OK(runner_->Signal(victim, SIGKILL)) << victim;
  WaitForMembershipEvent(std::set<std::string>{"WorkerFailed", "WorkerRemoved"}, 2);
  ExpectSucceededWithExactResults();
}

}  // namespace
}  // namespace ringmaster::testing
