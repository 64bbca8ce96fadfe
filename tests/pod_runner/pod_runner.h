// PodRunner: a kubelet for KWOK's fake nodes, for end-to-end tests. It runs the pods of one job (label
// ringmaster.io/job-name=<job>), or the pods matching `label_selector` (e.g. the operator's own Deployment),
// as local processes, so real workers run under the real operator. It has two modes:
//
// Bin-dir mode (`bin_dir` set, `image_dir` empty): the container's image is ignored.
//   * A pod is started once KWOK reports it Running with a pod IP in the loopback pod CIDR (127.x): its
//     first container's environment is resolved as the kubelet would (container_env.h; Secrets and
//     ConfigMaps read with the runner's admin credentials), the command is looked up by its base name
//     in `bin_dir`, and it runs with only that environment plus PATH (`bin_dir` first), HOME (its own directory) and
//     KUBECONFIG: a kubeconfig holding a TokenRequest token of the pod's service account, bound to the
//     pod, so the worker authenticates exactly as in a pod (with only its per-job Role). Output goes to
//     `<work_dir>/<pod>.<uid prefix>.log`; one progress line per event goes to `options.log`.
//
// Image mode (`image_dir` set): pods run from their images, as a kubelet would (container_start.h).
//   * Every container of the pod runs from its image: an OCI archive <image_dir>/NAME.tar holding the tag
//     (oci_image.h; a missing image fails the pod, as ErrImageNeverPull), unpacked once into
//     `rootfs_cache_dir` (rootfs_cache.h) and shared read-only, each container with an overlayfs layer of
//     its own under `work_dir`, in its own mount and UTS namespaces, chrooted, as its user (runAsUser,
//     runAsGroup, runAsNonRoot, the image's User), with Kubernetes' command/args rules against
//     ENTRYPOINT/CMD, the image's Env under the container's env (fieldRefs included), workingDir, the
//     service-account token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount (the token a
//     TokenRequest bound to the pod; in-cluster config through KUBERNETES_SERVICE_HOST/PORT, no
//     KUBECONFIG), and emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes
//     (pod_spec.h). It shares the host's network and binds its pod IP. Needs root. A pod using a feature
//     the runner cannot honour (pod_spec.h lists them: initContainers, startupProbe, other volume types...)
//     fails at once with a reason naming it. Not enforced (logged nowhere, documented here):
//     seccomp/AppArmor profiles, capabilities.drop, allowPrivilegeEscalation, resources; the token is not
//     rotated.
//   * Readiness probes (httpGet to the pod IP, tcpSocket, exec inside the container) run on their
//     periodSeconds with successThreshold/failureThreshold, and the runner patches the pod's status
//     (Ready, ContainersReady, containerStatuses[].ready) when they change. KWOK's pod-ready stage
//     (tests/harness/cluster/kwok-stages.yaml) leaves a pod with a readiness probe NotReady at start only
//     when it carries the annotation kProbedReadinessAnnotation; otherwise KWOK marks it Ready at once and
//     the runner patches it NotReady when its first container starts (a short window in which it looks
//     Ready). Pods without the annotation keep KWOK's old behaviour where no runner runs.
//   * restartPolicy (restart_policy.h): a container that exits (Always: any exit; OnFailure: non-zero)
//     is restarted in place after a back-off -- kTestRestartBackOff: 1 s doubling to 10 s, starting over
//     after a run of 10 s (the kubelet's 10 s to 5 min, scaled for tests). Its writable layer, the pod's
//     volumes and its log file (appended to) persist across restarts; the pod stays Running (nothing is
//     reported through KWOK's stage labels), NotReady while the container waits, and the runner patches
//     containerStatuses[].restartCount (status subresource). Each run is a RunnerProcess of its own
//     (`restart` counts them). A pod deleted, replaced or on a lost node is never restarted.
//   * Liveness probes (the same kinds and counting as readiness probes, readiness_probe.h) run on their
//     periodSeconds after initialDelaySeconds; after failureThreshold failures in a row the container's
//     process group is SIGKILLed ("liveness probe of POD/CONTAINER failed N times: WHY; killing it") and
//     the exit (137) is handled like any other: restarted per restartPolicy, or the pod fails (Never).
//   * The pod's exit is reported when every container has exited and none is to be restarted: 0 when
//     all (their last runs) exited 0, else the first non-zero code.
//
// Bin-dir mode ignores restartPolicy and probes: a container runs once, as always -- except with
// `pod_network`:
//   * Each pod runs in a network namespace of its own on a simulated network (pod_network.h) with its pod
//     IP, the apiserver relayed to 127.0.0.1:<its port> inside, so Partition() makes a real partition.
//     Needs root. The readiness probes of pods carrying kProbedReadinessAnnotation run as in image mode
//     (httpGet, tcpSocket), from the network's side of the pod's link, as a kubelet's cross the node's
//     network: a cut pod fails them.
//   * While a pod is cut, the runner acts on nothing of it (its deletion, its node's loss): the kubelet of
//     a partitioned node hears of them only when the partition heals; then it kills the process. The pod
//     carries kPartitionedLabel meanwhile, which holds KWOK's pod-delete stage back (kwok-stages.yaml):
//     a deleted pod stays Terminating, its IP and GPU taken, as no kubelet confirmed the deletion.
//
// In both modes:
//   * When the process exits by itself, the exit is reported through KWOK's stage labels: exit 0 ->
//     pod-container-completed (the pod Succeeds), otherwise pod-container-running-failed with the exit
//     code annotation (128+signal for a signal) -- so the operator sees a real pod lifecycle.
//   * When its pod is deleted (or being deleted), replaced by a new pod of the same name (another uid),
//     or its node goes NotReady (KWOK's node-not-ready chaos label, or Ready not True) or disappears,
//     the process group is SIGKILLed at once (a lost node) and nothing is reported.
//   * A pod that cannot start is reported failed with exit code 128 and the reason is added to Errors():
//     at once when no retry can help (no command, an unsupported env source or pod feature), else when its
//     start kept failing (no Secret yet, no token, no binary or image) for `start_timeout`. The first
//     start of an image waits for its unpack (minutes for the worker image) before that clock matters.
//
// Errors: Start() returns FailedPrecondition/InvalidArgument for bad options or kubeconfig, and
// DeadlineExceeded when the pod and node caches do not sync within `sync_timeout`. Every later failure is
// a progress line and, when it affects a pod, an entry of Errors(); nothing waits without a deadline.
// Ownership: the runner owns its processes; Stop() (and the destructor) kills every one still running.
// Thread-safety: every public method is thread-safe; the runner works on one thread of its own (which
// also runs the probes and waits for image unpacks).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "base/status.h"

namespace ringmaster::kube {
class Client;
class Informer;
}  // namespace ringmaster::kube

namespace ringmaster::testing {
class PodNetwork;
}  // namespace ringmaster::testing

namespace ringmaster::testing {

struct PodStartContext;  // container_start.h

// A pod annotated kProbedReadinessAnnotation=pod-runner stays NotReady after KWOK starts it until the
// pod runner's readiness probes pass (image mode). Put it in a TrainingJob's template metadata.
inline constexpr char kProbedReadinessAnnotation[] = "ringmaster.io/readiness";
inline constexpr char kProbedReadinessValue[] = "pod-runner";
// On a pod whose network PodRunner::Partition cut, until Heal (see pod_network above).
inline constexpr char kPartitionedLabel[] = "ringmaster.test/partitioned";

struct PodRunnerOptions {
  std::string kubeconfig;  // admin: watch pods/nodes, read Secrets, patch pods, TokenRequest
  std::string ns;          // the pods' namespace
  std::string job;         // pods labelled ringmaster.io/job-name=<job> (unless label_selector is set)
  // A label selector ("app=x,tier in (a,b)") for the pods to run, instead of the job's label; `job` is
  // then only a name for progress lines (may be empty). One of job and label_selector is required.
  std::string label_selector;
  std::string bin_dir;                 // bin-dir mode: where a container's command[0] is found (by its base name)
  std::string image_dir;               // set: image mode, the OCI archives <image_dir>/NAME.tar (bin_dir unused)
  std::string rootfs_cache_dir;        // image mode: unpacked images; "": DefaultRootfsCacheDir() (rootfs_cache.h)
  std::string work_dir;                // per-pod kubeconfigs, homes, container layers, volumes and logs (created)
  std::string pod_ip_prefix = "127.";  // only pods with such an IP can run here
  bool pod_network = false;            // bin-dir mode: each pod in a network namespace of its own (see above)
  LogSink log;                         // progress lines; empty: stderr
  std::chrono::milliseconds poll_interval{50};
  std::chrono::seconds start_timeout{20};
  std::chrono::seconds sync_timeout{30};
};

// One process the runner started (a snapshot): a run of a pod's container (a restart is a new one).
struct RunnerProcess {
  std::string pod, uid, node, ip;
  std::string container;  // its name
  pid_t pid = -1;
  bool running = true;
  int exit_code = -1;      // once !running: the exit status, or 128+signal
  std::string killed_for;  // "" when it exited by itself; else why the runner killed it (or, for a run
                           // waiting for its restart when its pod or node went, why it was not restarted)
  bool reported = false;   // its exit was reported to the apiserver (KWOK stage labels)
  std::string log_file;
  std::string kubeconfig;  // bin-dir mode: the pod's (its service-account token, valid while the pod exists)
  bool ready = true;       // image mode: its readiness probe's verdict (true without a probe)
  int restart = 0;         // image mode: 0 for the container's first run, N for its Nth restart
  // Image mode: why its liveness probe failed, when the runner SIGKILLed it for that (an exit handled
  // like one by itself: killed_for stays "", it is restarted or reported).
  std::string liveness_failure;
};

class PodRunner {
 public:
  static StatusOr<std::unique_ptr<PodRunner>> Start(PodRunnerOptions options);
  ~PodRunner();  // Stop()s
  PodRunner(const PodRunner&) = delete;
  PodRunner& operator=(const PodRunner&) = delete;

  // Kills every running process (SIGKILL to its process group, reported as nothing) and stops
  // watching. Idempotent.
  void Stop();

  // Every process started so far, in start order.
  std::vector<RunnerProcess> Processes() const;
  // Sends `signal` to every running process (container) of pod `pod` (a crash when SIGKILL: its exit is
  // reported like any other). NotFound when that pod has no running process.
  Status Signal(const std::string& pod, int signal);
  // pod_network: takes the link of pod `pod`'s running process down (and with control_plane_too stalls
  // its apiserver relay) and labels the pod kPartitionedLabel; Heal brings back every cut process of that
  // name (one that exited meanwhile included) and removes the label (pod_network.h). FailedPrecondition
  // without pod_network; NotFound when the pod runs nothing here (Heal: never ran here).
  Status Partition(const std::string& pod, bool control_plane_too);
  Status Heal(const std::string& pod);
  // Failures that affected pods (a start that never succeeded, an exit that could not be reported).
  std::vector<std::string> Errors() const;
  // The progress lines so far and the last `tail_bytes` of every process's log, for a failed test.
  std::string Describe(size_t tail_bytes = 3000) const;

 private:
  struct Proc;
  struct Pending;
  explicit PodRunner(PodRunnerOptions options);
  void Run();
  void Tick();
  // Kills processes whose pod or node is gone and reaps those that exited (under mu_).
  void KillAndReapLocked(const std::vector<nlohmann::json>& pods, const std::vector<nlohmann::json>& nodes);
  // Reports exits not reported yet (outside mu_: API calls).
  void ReportExits();
  // pod_network: deletes the namespaces of pods whose last process has ended (outside mu_).
  void ReleaseNetworks();
  // The uid of the running process of pod `pod`, or NotFound.
  StatusOr<std::string> RunningUid(const std::string& pod) const;
  // Starts `pod`'s first container as a process; the error says why it cannot (yet).
  Status StartPod(const nlohmann::json& pod);
  // Image mode: starts every container of `pod` from its image.
  Status StartImagePod(const nlohmann::json& pod);
  // Image mode: how `pod`'s containers are started (its callbacks refer to `pod`, which must outlive it).
  PodStartContext StartContext(const nlohmann::json& pod);
  // Image mode: restarts the containers whose back-off is over (their pods in `pods`).
  void RestartContainers(const std::vector<nlohmann::json>& pods);
  // Image mode: runs the readiness and liveness probes that are due, kills containers whose liveness
  // probe failed, and patches the readiness and restart counts of pods that changed.
  void ProbeContainers(const std::vector<nlohmann::json>& pods);
  // Pods whose readiness KWOK owns (no kProbedReadinessAnnotation) that run here on a Ready node but
  // read NotReady are patched Ready again: the node lifecycle controller marks every pod of a node it
  // sees NotReady, late, and nothing else would undo it (a kubelet's status sync does). Outside mu_.
  void ReassertReadiness(const std::vector<nlohmann::json>& pods, const std::vector<nlohmann::json>& nodes);
  // Patches the pod's Ready/ContainersReady conditions and containerStatuses[].ready and .restartCount.
  Status PatchContainerStatuses(const nlohmann::json& pod, const std::map<std::string, bool>& ready,
                                const std::map<std::string, int>& restarts);
  // The pod's service-account token (TokenRequest bound to it).
  StatusOr<std::string> PodToken(const nlohmann::json& pod, const std::vector<std::string>& audiences,
                                 int64_t expiration_seconds);
  // Reports an exit through KWOK's stage labels (0: completed; else failed with the exit code).
  Status ReportExit(const std::string& pod, const std::string& uid, int exit_code);
  // Records and prints a progress line. Takes only log_mu_ (callable with mu_ held).
  void Log(const std::string& line);

  // Constant after construction.
  const PodRunnerOptions options_;
  const std::chrono::steady_clock::time_point started_at_;
  std::shared_ptr<kube::Client> client_;
  std::string server_, ca_pem_;
  std::unique_ptr<kube::Informer> pods_, nodes_;
  std::unique_ptr<PodNetwork> network_;  // with pod_network

  std::atomic<bool> stopping_{false};
  std::thread thread_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  std::vector<std::unique_ptr<Proc>> procs_;
  std::vector<std::unique_ptr<Pending>> pending_;  // pods whose start failed so far, retried
  std::vector<std::string> errors_;
  bool stopped_ = false;
  uint64_t exits_ = 0;  // exits seen so far (orders a pod's container exits)

  // Used by the runner's thread only.
  std::map<std::string, std::chrono::steady_clock::time_point> readiness_patched_;  // by pod uid

  mutable std::mutex log_mu_;  // taken after mu_ when both are held
  // Guarded by log_mu_.
  std::vector<std::string> lines_;
};

}  // namespace ringmaster::testing
