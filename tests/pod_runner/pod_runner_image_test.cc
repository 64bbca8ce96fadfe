// The pod runner's image mode against the real local control plane: a pod run from a small OCI image the
// test builds with umoci (a shell and a few coreutils with their libraries), with Kubernetes' command/args
// rules against the image's ENTRYPOINT/CMD, env (the image's and fieldRefs), workingDir, the image's User
// and runAsUser, the service-account files at the usual path, an emptyDir shared by two containers, an
// exec readiness probe flipping the pod Ready and NotReady again, the pod's exit once every container has
// exited; a pod with an unsupported volume failing with a readable reason; restartPolicy Always (a
// container restarted in place, its layer kept, and again when its liveness probe fails) and OnFailure;
// and pods picked by a label selector. Needs root and umoci.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/json_path.h"
#include "base/status_test_macros.h"
#include "base/subprocess.h"
#include "tests/pod_runner/pod_runner.h"
#include "tests/support/cluster_test.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

constexpr char kJob[] = "tiny";

// Builds <dir>/images/tiny.tar (tag 1): ENTRYPOINT ["/bin/sh", "-c"], CMD ["echo from-cmd $IMG; sleep 4"], User 1234,
// WorkingDir /app, Env IMG=image, and /var/run -> /run as in Debian.
constexpr char kBuildImage[] = R"sh(set -eu
D=$1
rm -rf "$D/layout" "$D/bundle" "$D/images"; mkdir -p "$D/images"
umoci init --layout "$D/layout"
umoci new --image "$D/layout:1"
umoci unpack --image "$D/layout:1" "$D/bundle" >/dev/null
R=$D/bundle/rootfs
for b in /bin/sh /bin/cat /usr/bin/id /bin/sleep /bin/rm /usr/bin/touch /bin/pwd; do
  mkdir -p "$R$(dirname $b)"; cp -L "$b" "$R$b"
  for l in $(ldd "$b" | grep -o '/[^ ]*'); do mkdir -p "$R$(dirname $l)"; cp -L "$l" "$R$l"; done
done
mkdir -p "$R/etc" "$R/app" "$R/run" "$R/var" "$R/home/tester"
ln -s /run "$R/var/run"
printf 'root:x:0:0:root:/root:/bin/sh\ntester:x:1234:1234:tester:/home/tester:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\ntester:x:1234:\n' > "$R/etc/group"
chown 1234:1234 "$R/home/tester"
umoci repack --image "$D/layout:1" "$D/bundle" >/dev/null
umoci config --image "$D/layout:1" --config.entrypoint /bin/sh --config.entrypoint -c --config.cmd 'echo from-cmd $IMG; sleep 4' \
  --config.env IMG=image --config.env PATH=/usr/bin:/bin --config.workingdir /app --config.user 1234
(cd "$D/layout" && tar -cf "$D/images/tiny.tar" .)
)sh";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PodRunnerImageTest : public ClusterTest {
 protected:
  void SetUp() override {
    // Not skipped: make deps installs umoci and the tests run as root; a machine without them fails here.
    ASSERT_EQ(::geteuid(), 0) << "image mode needs root (mount namespaces, chroot, file owners)";
    ASSERT_EQ(::access("/usr/bin/umoci", X_OK), 0) << "umoci is missing: run make deps";
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    ns_ = CreateNamespace("podimg");
    dir_ = ::testing::TempDir() + "pod-runner-image-" + ns_;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    SpawnOptions build;
    build.argv = {"bash", "-c", kBuildImage, "build", dir_};
    build.out = build.err = Redirect::AppendTo(dir_ + "/build.log");
    auto p = Subprocess::Start(build);
    ASSERT_OK(p);
    ASSERT_EQ(p->Wait().code, 0) << Read(dir_ + "/build.log");
    AddPoolNode(ns_ + "-n", ns_, 0);

    PodRunnerOptions o;
    o.kubeconfig = cluster_.kubeconfig();
    o.ns = ns_;
    o.job = kJob;
    o.image_dir = dir_ + "/images";
    o.rootfs_cache_dir = dir_ + "/rootfs-cache";
    o.work_dir = dir_ + "/pods";
    auto runner = PodRunner::Start(o);
    ASSERT_OK(runner) << runner.status();
    runner_ = std::move(runner).value();
  }

  void TearDown() override {
    if (runner_) {
      if (HasFailure()) std::cerr << runner_->Describe() << "\n";
      runner_->Stop();
    }
    if (!HasFailure() && !dir_.empty()) std::filesystem::remove_all(dir_);  // kept for a failed test
    ClusterTest::TearDown();
  }

  // `probed`: the runner owns the pod's readiness (kProbedReadinessAnnotation), else KWOK does.
  std::string PodHead(const std::string& name, const std::string& restart_policy = "Never",
                      const std::string& labels = std::string("ringmaster.io/job-name: ") + kJob, bool probed = true) {
    const std::string annotations =
        probed ? "\n  annotations: {" + std::string(kProbedReadinessAnnotation) + ": " + kProbedReadinessValue + "}"
               : "";
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns_ + "\n  labels: {" +
           labels + "}" + annotations + "\nspec:\n  restartPolicy: " + restart_policy + "\n" + PoolPlacement(ns_, 2);
  }

  // Replaces the runner with one started with `o` on top of the fixture's options.
  void RestartRunner(const std::function<void(PodRunnerOptions&)>& change) {
    runner_->Stop();
    PodRunnerOptions o;
    o.kubeconfig = cluster_.kubeconfig();
    o.ns = ns_;
    o.job = kJob;
    o.image_dir = dir_ + "/images";
    o.rootfs_cache_dir = dir_ + "/rootfs-cache";
    o.work_dir = dir_ + "/pods";
    change(o);
    auto runner = PodRunner::Start(o);
    ASSERT_OK(runner) << runner.status();
    runner_ = std::move(runner).value();
  }

  // The runs of pod/container so far, in start order.
  std::vector<RunnerProcess> Runs(const std::string& pod, const std::string& container) {
    std::vector<RunnerProcess> out;
    for (const auto& p : runner_->Processes())
      if (p.pod == pod && p.container == container) out.push_back(p);
    return out;
  }

  // Waits until pod/container's run `restart` is running.
  void WaitForRun(const std::string& pod, const std::string& container, int restart) {
    Status s =
        WaitFor(pod + "/" + container + " restart " + std::to_string(restart), seconds(60), [&](std::string* last) {
          std::vector<RunnerProcess> runs = Runs(pod, container);
          *last = std::to_string(runs.size()) + " runs";
          return static_cast<int>(runs.size()) > restart && runs[restart].running;
        });
    ASSERT_OK(s) << s;
  }

  static int64_t RestartCount(const json& pod) {
    const json& statuses = At(pod, {"status", "containerStatuses"});
    return statuses.is_array() && !statuses.empty() ? IntAt(statuses[0], {"restartCount"}, 0) : 0;
  }

  // Waits until `check` holds for the pod's JSON.
  void WaitForPod(const std::string& name, const std::string& what, const std::function<bool(const json&)>& check,
                  seconds timeout = seconds(60)) {
    Status s = WaitFor(name + " " + what, timeout, [&](std::string* last) {
      auto pod = cluster_.KubectlJson({"get", "pod", name, "-n", ns_, "-o", "json"});
      if (!pod.ok()) return false;
      *last = At(*pod, {"status"}).dump();
      return check(*pod);
    });
    ASSERT_OK(s) << s;
  }

  static std::string Condition(const json& pod, const std::string& type) {
    for (const auto& c : At(pod, {"status", "conditions"}).is_array() ? pod["status"]["conditions"] : json::array()) {
      if (StringAt(c, {"type"}) == type) return StringAt(c, {"status"});
    }
    return "";
  }

  std::string LogOf(const std::string& pod, const std::string& container) {
    for (const auto& p : runner_->Processes())
      if (p.pod == pod && p.container == container) return Read(p.log_file);
    return "";
  }

  std::string ns_, dir_;
  std::unique_ptr<PodRunner> runner_;
};

TEST_F(PodRunnerImageTest, RunsEveryContainerFromItsImageAsAKubeletWould) {
  const std::string writer_script =
      "echo \"args=$0,$1 env=$IMG,$MY_POD,$MY_IP cwd=$(pwd) uid=$(id -u) gid=$(id -g) home=$HOME host=$HOSTNAME\"; "
      "echo \"ns=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)\"; "
      "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-readable; "
      "test -s /var/run/secrets/kubernetes.io/serviceaccount/ca.crt && echo ca-readable; "
      "echo \"api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT\"; "
      "echo shared-by-writer > /shared/f; touch /tmp/ready; sleep 8; rm /tmp/ready; sleep 8";
  ASSERT_OK(
      cluster_.Apply(PodHead("p") +
                     "  containers:\n"
                     "  - name: writer\n    image: registry.example:5000/team/tiny:1\n"
                     "    args: [" +
                     json(writer_script).dump() +
                     ", a0, a1]\n"
                     "    env:\n    - {name: MY_POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
                     "    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
                     "    volumeMounts: [{name: shared, mountPath: /shared}]\n"
                     "    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1, failureThreshold: 1}\n"
                     "  - name: reader\n    image: tiny:1\n"
                     "    command: [/bin/sh, -c, 'while [ ! -f /shared/f ]; do sleep 0.2; done; cat /shared/f; echo "
                     "\"uid=$(id -u) cwd=$(pwd)\"; sleep 4']\n"
                     "    workingDir: /work\n    securityContext: {runAsUser: 4321}\n"
                     "    volumeMounts: [{name: shared, mountPath: /shared, readOnly: true}]\n"
                     "  - name: defaults\n    image: tiny:1\n"
                     "  volumes: [{name: shared, emptyDir: {}}]\n"));

  // Running but not Ready until the exec probe finds /tmp/ready inside the writer; then NotReady again.
  // (reader and defaults sleep 4 s before they exit: a pod with an exited container is never Ready.)
  WaitForPod("p", "Running", [](const json& p) { return StringAt(p, {"status", "phase"}) == "Running"; });
  WaitForPod("p", "Ready", [](const json& p) { return Condition(p, "Ready") == "True"; });
  auto pod = cluster_.KubectlJson({"get", "pod", "p", "-n", ns_, "-o", "json"});
  ASSERT_OK(pod);
  const std::string ip = StringAt(*pod, {"status", "podIP"});
  for (const auto& cs : (*pod)["status"]["containerStatuses"]) EXPECT_EQ(cs["ready"], true) << cs.dump();
  WaitForPod("p", "NotReady again", [](const json& p) { return Condition(p, "Ready") == "False"; });
  WaitForPod("p", "Succeeded", [](const json& p) { return StringAt(p, {"status", "phase"}) == "Succeeded"; });

  const std::string writer = LogOf("p", "writer");
  EXPECT_NE(writer.find("args=a0,a1 env=image,p," + ip + " cwd=/app uid=1234 gid=1234 home=/home/tester host=p"),
            std::string::npos)
      << writer;
  EXPECT_NE(writer.find("ns=" + ns_), std::string::npos) << writer;
  EXPECT_NE(writer.find("token-readable"), std::string::npos) << writer;
  EXPECT_NE(writer.find("ca-readable"), std::string::npos) << writer;
  EXPECT_NE(writer.find("api=127.0.0.1:"), std::string::npos) << writer;
  const std::string reader = LogOf("p", "reader");
  EXPECT_NE(reader.find("shared-by-writer\nuid=4321 cwd=/work"), std::string::npos) << reader;
  EXPECT_NE(LogOf("p", "defaults").find("from-cmd image"), std::string::npos);
  EXPECT_TRUE(runner_->Errors().empty()) << runner_->Errors().front();
  // The image was unpacked once, into the cache.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ + "/rootfs-cache"), {}), 2);  // <hex>, <hex>.lock
}

TEST_F(PodRunnerImageTest, AnUnsupportedVolumeFailsThePodWithItsName) {
  ASSERT_OK(cluster_.Apply(PodHead("bad") + "  containers:\n  - name: c\n    image: tiny:1\n"
                                            "    volumeMounts: [{name: data, mountPath: /data}]\n"
                                            "  volumes: [{name: data, nfs: {server: nfs.example, path: /exports}}]\n"));
  WaitForPod("bad", "Failed", [](const json& p) { return StringAt(p, {"status", "phase"}) == "Failed"; });
  std::vector<std::string> errors = runner_->Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("volume data: volume type nfs is not supported by the pod runner"), std::string::npos)
      << errors[0];
  EXPECT_TRUE(runner_->Processes().empty());
}

TEST_F(PodRunnerImageTest, AMissingImageFailsThePodLikeErrImageNeverPull) {
  runner_->Stop();
  PodRunnerOptions o;
  o.kubeconfig = cluster_.kubeconfig();
  o.ns = ns_;
  o.job = kJob;
  o.image_dir = dir_ + "/images";
  o.rootfs_cache_dir = dir_ + "/rootfs-cache";
  o.work_dir = dir_ + "/pods";
  o.start_timeout = seconds(2);
  auto runner = PodRunner::Start(o);
  ASSERT_OK(runner);
  runner_ = std::move(runner).value();
  ASSERT_OK(cluster_.Apply(PodHead("missing") + "  containers:\n  - name: c\n    image: tiny:2\n"));
  WaitForPod("missing", "Failed", [](const json& p) { return StringAt(p, {"status", "phase"}) == "Failed"; });
  std::vector<std::string> errors = runner_->Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("image tiny:2 not found in " + dir_ + "/images: "), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("has no manifest tagged 2 (it has: 1)"), std::string::npos) << errors[0];
}

TEST_F(PodRunnerImageTest, RestartPolicyAlwaysRestartsInPlaceAndALivenessFailureRestartsAgain) {
  // The first run leaves a marker in its writable layer and exits 3; later runs find it and stay up,
  // alive while /alive/ok (an emptyDir) exists.
  const std::string script =
      "if [ -f /home/tester/ran ]; then echo run-again; touch /alive/ok; exec sleep 1000; fi; "
      "touch /home/tester/ran; echo first-run; exit 3";
  ASSERT_OK(
      cluster_.Apply(PodHead("r", "Always") +
                     "  containers:\n  - name: c\n    image: tiny:1\n"
                     "    command: [/bin/sh, -c, " +
                     json(script).dump() +
                     "]\n"
                     "    volumeMounts: [{name: alive, mountPath: /alive}]\n"
                     "    livenessProbe: {exec: {command: [/bin/sh, -c, 'test -f /alive/ok']}, initialDelaySeconds: 1,"
                     " periodSeconds: 1, failureThreshold: 2}\n"
                     "  volumes: [{name: alive, emptyDir: {}}]\n"));
  bool ended = false;  // the pod was ever reported Failed or Succeeded
  auto running_with_restarts = [&](int64_t n) {
    return [&ended, n](const json& p) {
      const std::string phase = StringAt(p, {"status", "phase"});
      ended |= phase == "Failed" || phase == "Succeeded";
      return phase == "Running" && RestartCount(p) >= n;
    };
  };
  WaitForRun("r", "c", 1);
  WaitForPod("r", "Running with restartCount 1", running_with_restarts(1));
  std::vector<RunnerProcess> runs = Runs("r", "c");
  ASSERT_GE(runs.size(), 2u);
  EXPECT_FALSE(runs[0].running);
  EXPECT_EQ(runs[0].exit_code, 3);
  EXPECT_EQ(runs[0].killed_for, "");
  EXPECT_FALSE(runs[0].reported);
  EXPECT_EQ(runs[1].restart, 1);
  const std::string log = LogOf("r", "c");  // one log, appended to by every run
  EXPECT_NE(log.find("first-run\nrun-again"), std::string::npos) << log;

  // The liveness probe fails once /alive/ok is gone: the container is SIGKILLed and restarted.
  const std::string marker = dir_ + "/pods/r." + runs[1].uid.substr(0, 8) + ".pod/volumes/alive/ok";
  ASSERT_TRUE(std::filesystem::exists(marker)) << marker;
  std::filesystem::remove(marker);
  WaitForRun("r", "c", 2);
  WaitForPod("r", "Running with restartCount 2", running_with_restarts(2));
  runs = Runs("r", "c");
  EXPECT_EQ(runs[1].exit_code, 128 + SIGKILL);
  EXPECT_NE(runs[1].liveness_failure.find("exec /bin/sh"), std::string::npos) << runs[1].liveness_failure;
  EXPECT_EQ(runs[1].killed_for, "");
  EXPECT_NE(runner_->Describe().find("liveness probe of r/c failed 2 times: "), std::string::npos);
  EXPECT_FALSE(ended);
  auto pod = cluster_.KubectlJson({"get", "pod", "r", "-n", ns_, "-o", "json"});
  ASSERT_OK(pod);
  EXPECT_EQ(At(*pod, {"metadata", "labels"}).dump().find("stage.kwok"), std::string::npos) << (*pod)["metadata"].dump();
  for (const auto& run : runs) EXPECT_FALSE(run.reported);
  EXPECT_TRUE(runner_->Errors().empty()) << runner_->Errors().front();

  // Deleted: killed, not restarted.
  ASSERT_OK(cluster_.Kubectl({"delete", "pod", "r", "-n", ns_, "--wait=false"}).status());
  Status s = WaitFor("r's last run killed", seconds(30), [&](std::string*) { return !Runs("r", "c").back().running; });
  ASSERT_OK(s) << s;
  std::this_thread::sleep_for(seconds(2));  // longer than the back-off would be
  EXPECT_EQ(Runs("r", "c").size(), 3u);
}

TEST_F(PodRunnerImageTest, ALabelSelectorPicksThePodsAndOnFailureEndsInSuccess) {
  RestartRunner([](PodRunnerOptions& o) {
    o.job = "";
    o.label_selector = "app=op";
  });
  if (HasFatalFailure()) return;
  const std::string script =
      "if [ -f /home/tester/ran ]; then echo selected; exit 0; fi; touch /home/tester/ran; exit 3";
  ASSERT_OK(cluster_.Apply(PodHead("ignored") + "  containers:\n  - name: c\n    image: tiny:1\n"));
  ASSERT_OK(cluster_.Apply(PodHead("sel", "OnFailure", "app: op") +
                           "  containers:\n  - name: c\n    image: tiny:1\n"
                           "    command: [/bin/sh, -c, " +
                           json(script).dump() + "]\n"));
  WaitForPod("sel", "Succeeded", [](const json& p) { return StringAt(p, {"status", "phase"}) == "Succeeded"; });
  std::vector<RunnerProcess> runs = Runs("sel", "c");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].exit_code, 3);
  EXPECT_EQ(runs[1].exit_code, 0);
  EXPECT_TRUE(runs[1].reported);
  EXPECT_NE(LogOf("sel", "c").find("selected"), std::string::npos);
  EXPECT_TRUE(Runs("ignored", "c").empty());  // the job's label alone no longer selects it
  EXPECT_TRUE(runner_->Errors().empty()) << runner_->Errors().front();
}

// The node lifecycle controller marks every pod of a node it sees NotReady as NotReady, and may do so
// after the node is back; a kubelet's status sync then marks them Ready again, and so does the runner
// for a pod whose readiness KWOK owns (here the controller's patch is made by hand).
TEST_F(PodRunnerImageTest, APodMarkedNotReadyOnAReadyNodeIsMarkedReadyAgain) {
  ASSERT_OK(cluster_.Apply(PodHead("kwok-ready", "Never", std::string("ringmaster.io/job-name: ") + kJob, false) +
                           "  containers:\n  - name: c\n    image: tiny:1\n    command: [/bin/sleep, '60']\n"));
  auto ready = [](const json& p) {
    for (const auto& c : p["status"].value("conditions", json::array()))
      if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
    return false;
  };
  WaitForRun("kwok-ready", "c", 0);
  WaitForPod("kwok-ready", "Ready", ready);
  auto marked =
      cluster_.Kubectl({"patch", "pod", "kwok-ready", "-n", ns_, "--subresource=status", "--type=strategic", "-p",
                        R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"NodeNotReady"}]}})"});
  ASSERT_COMMAND_OK(marked);
  WaitForPod("kwok-ready", "Ready again", ready);
  EXPECT_TRUE(runner_->Errors().empty()) << runner_->Errors().front();
}

}  // namespace
}  // namespace ringmaster::testing
