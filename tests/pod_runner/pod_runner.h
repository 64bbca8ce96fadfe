// PodRunner: a kubelet for KWOK's fake nodes, for the end-to-end tests and `make demo`. It runs the pods of
// one job (label ringmaster.io/job-name=<job>), or the pods matching `label_selector` (e.g. the operator's own
// Deployment), as local processes, so that real workers run under the real operator. A pod's image is
// ignored: pods that must run from their images go to the cluster's real nodes, whose kubelets run them.
//
// Starting a pod:
//   * A pod is started once KWOK reports it Running with a pod IP that starts with `pod_ip_prefix` (KWOK's
//     loopback pod CIDR, 127.x) on a Ready node. Its first container's environment is resolved as the
//     kubelet would (container_env.h; Secrets and ConfigMaps read with the runner's admin credentials), the
//     command is looked up by its base name in `bin_dir`, and it runs with only that environment plus PATH
//     (`bin_dir` first), HOME (its own directory), HOSTNAME (the pod's name) and KUBECONFIG: a kubeconfig
//     holding a TokenRequest token of the pod's service account, bound to the pod, so the worker
//     authenticates exactly as in a pod (with only its per-job Role). It works in the container's
//     workingDir, else in its home. Output goes to `<work_dir>/<pod>.<uid prefix>.log`; one progress line
//     per event goes to `options.log`.
//   * One process per pod, run once: the pod's other containers and its restartPolicy are ignored.
//
// With `pod_network` (needs root):
//   * Each pod runs in a network namespace of its own on a simulated network (pod_network.h) with its pod
//     IP, the apiserver relayed to 127.0.0.1:<its port> inside, so Partition() makes a real partition.
//   * A pod annotated kProbedReadinessAnnotation whose container has a readinessProbe is left Running but
//     NotReady by KWOK's pod-ready stage (tests/harness/cluster/kwok-stages.yaml): the runner runs that probe
//     (httpGet or tcpSocket, readiness_probe.h) on its periodSeconds with successThreshold/failureThreshold,
//     from the network's side of the pod's link, as a kubelet's probes cross the node's network (a cut pod
//     fails it), and patches the pod's status (Ready, ContainersReady, containerStatuses[].ready) when its
//     verdict changes. Without pod_network no probe runs, so such a pod stays NotReady; pods without the
//     annotation are made Ready by KWOK at once.
//   * While a pod is cut, the runner acts on nothing of it (its deletion, its node's loss) and reports
//     nothing of it: the kubelet of a partitioned node hears of them only when the partition heals; then it
//     kills the process or reports its exit. The pod carries kPartitionedLabel meanwhile, which holds KWOK's
//     pod-delete stage back (kwok-stages.yaml): a deleted pod stays Terminating, its IP and GPU taken, as no
//     kubelet confirmed the deletion.
//
// A pod's end:
//   * When the process exits by itself, the exit is reported through KWOK's stage labels: exit 0 ->
//     pod-container-completed (the pod Succeeds), otherwise pod-container-running-failed with the exit
//     code annotation (128+signal for a signal) -- so the operator sees a real pod lifecycle. A report that
//     fails is retried on every tick for minutes (a control-plane outage) before it counts as an error,
//     unless the pod is gone.
//   * When its pod is deleted (or being deleted), replaced by a new pod of the same name (another uid),
//     or its node goes NotReady (KWOK's node-not-ready chaos label, or Ready not True) or disappears,
//     the process group is SIGKILLed at once and nothing is reported (unless the pod is cut, above).
//   * A pod that cannot start is reported failed with exit code 128 and the reason is added to Errors():
//     at once when no retry can help (no command, an unsupported env source or probe), else when its start
//     kept failing (no Secret yet, no token, no binary) for `start_timeout`.
//   * The node lifecycle controller marks every pod of a node it saw NotReady as NotReady, sometimes after
//     the node is back. A pod without kProbedReadinessAnnotation whose process runs here on a Ready node but
//     reads NotReady is patched Ready again, as a kubelet's status sync would.
//
// Errors: Start() returns InvalidArgument for missing options, FailedPrecondition when `work_dir` cannot be
// created, the kubeconfig's and (with pod_network) the network's setup errors, and DeadlineExceeded when the
// pod and node caches do not sync within `sync_timeout`. Every later failure is a progress line and, when it
// affects a pod, an entry of Errors(); nothing waits without a deadline.
// Ownership: the runner owns its processes and, with pod_network, the network and the pods' namespaces;
// Stop() (and the destructor) kills every process still running and removes the network.
// Thread-safety: every public method is thread-safe; the runner works on one thread of its own (which also
// runs the probes).
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

// A pod annotated kProbedReadinessAnnotation=pod-runner stays NotReady after KWOK starts it until the
// pod runner's readiness probe passes (with pod_network, see above). Put it in a TrainingJob's template
// metadata.
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
  std::string bin_dir;                 // where a container's command[0] is found (by its base name)
  std::string work_dir;                // per-pod kubeconfigs, homes and logs (created)
  std::string pod_ip_prefix = "127.";  // only pods with such an IP can run here
  bool pod_network = false;            // each pod in a network namespace of its own (see above; root)
  LogSink log;                         // progress lines; empty: stderr
  std::chrono::milliseconds poll_interval{50};
  std::chrono::seconds start_timeout{20};
  std::chrono::seconds sync_timeout{30};
};

// One process the runner started (a snapshot): a pod's first container.
struct RunnerProcess {
  std::string pod, uid, node, ip;
  std::string container;  // its name
  pid_t pid = -1;
  bool running = true;
  int exit_code = -1;      // once !running: the exit status, or 128+signal
  std::string killed_for;  // "" when it exited by itself; else why the runner killed it
  bool reported = false;   // its exit was reported to the apiserver (KWOK stage labels)
  std::string log_file;
  std::string kubeconfig;  // the pod's (its service-account token, valid while the pod exists)
  bool ready = true;       // its readiness probe's verdict while it runs (true without a probe)
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
  // pod_network: runs the readiness probes that are due and patches the readiness of pods that changed.
  void ProbeContainers(const std::vector<nlohmann::json>& pods);
  // Pods whose readiness KWOK owns (no kProbedReadinessAnnotation) that run here on a Ready node but
  // read NotReady are patched Ready again: the node lifecycle controller marks every pod of a node it
  // sees NotReady, late, and nothing else would undo it (a kubelet's status sync does). Outside mu_.
  void ReassertReadiness(const std::vector<nlohmann::json>& pods, const std::vector<nlohmann::json>& nodes);
  // Patches the pod's Ready/ContainersReady conditions and containerStatuses[].ready.
  Status PatchContainerStatuses(const nlohmann::json& pod, const std::map<std::string, bool>& ready);
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

  // Used by the runner's thread only.
  std::map<std::string, std::chrono::steady_clock::time_point> readiness_patched_;  // by pod uid

  mutable std::mutex log_mu_;  // taken after mu_ when both are held
  // Guarded by log_mu_.
  std::vector<std::string> lines_;
};

}  // namespace ringmaster::testing
