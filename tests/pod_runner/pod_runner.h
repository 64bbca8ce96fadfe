// PodRunner: a kubelet for KWOK's fake nodes, for the last act of `make demo` (tests/harness/demo.sh runs
// ringmaster-pod-runner, pod_runner_main.cc). It runs the pods of one job (label ringmaster.io/job-name=<job>)
// as local processes, so that real workers run under the real operator. A pod's image is ignored: pods that
// must run from their images go to the cluster's real nodes, whose kubelets run them (the e2e tests' workers).
//
// Starting a pod:
//   * A pod is started once KWOK reports it Running with a pod IP that starts with `pod_ip_prefix` (KWOK's
//     loopback pod CIDR, 127.x) on a Ready node. Its first container's environment is resolved as the
//     kubelet would (container_env.h; Secrets and ConfigMaps read with the runner's admin credentials), the
//     command is looked up by its base name in `bin_dir`, and it runs with only that environment plus PATH
//     (`bin_dir` first), HOME (its own directory), HOSTNAME (the pod's name) and KUBECONFIG: a kubeconfig
//     holding a TokenRequest token of the pod's service account, bound to the pod, so the worker
//     authenticates exactly as in a pod (with only its per-job Role). It works in the container's
//     workingDir, else in its home, in the host's network namespace. Output goes to
//     `<work_dir>/<pod>.<uid prefix>.log`; one progress line per event goes to `options.log`.
//   * One process per pod, run once: the pod's other containers, its probes and its restartPolicy are
//     ignored (KWOK marks it Ready).
//
// A pod's end:
//   * When the process exits by itself, the exit is reported through KWOK's stage labels: exit 0 ->
//     pod-container-completed (the pod Succeeds), otherwise pod-container-running-failed with the exit
//     code annotation (128+signal for a signal) -- so the operator sees a real pod lifecycle. A report that
//     fails is retried on every tick for minutes (a control-plane outage) before it counts as an error,
//     unless the pod is gone.
//   * When its pod is deleted (or being deleted), replaced by a new pod of the same name (another uid),
//     or its node goes NotReady (KWOK's node-not-ready chaos label, or Ready not True) or disappears,
//     the process group is SIGKILLed at once and nothing is reported.
//   * A pod that cannot start is reported failed with exit code 128 and the reason is added to Errors():
//     at once when no retry can help (no command, an unsupported env source), else when its start kept
//     failing (no Secret yet, no token, no binary) for `start_timeout`.
//
// Errors: Start() returns InvalidArgument for missing options, FailedPrecondition when `work_dir` cannot be
// created, the kubeconfig's errors, and DeadlineExceeded when the pod and node caches do not sync within
// `sync_timeout`. Every later failure is a progress line and, when it affects a pod, an entry of Errors();
// nothing waits without a deadline.
// Ownership: the runner owns its processes; Stop() (and the destructor) kills every process still running.
// Thread-safety: every public method is thread-safe; the runner works on one thread of its own.
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

struct PodRunnerOptions {
  std::string kubeconfig;              // admin: watch pods/nodes, read Secrets, patch pods, TokenRequest
  std::string ns;                      // the pods' namespace
  std::string job;                     // the pods labelled ringmaster.io/job-name=<job>
  std::string bin_dir;                 // where a container's command[0] is found (by its base name)
  std::string work_dir;                // per-pod kubeconfigs, homes and logs (created)
  std::string pod_ip_prefix = "127.";  // only pods with such an IP can run here
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
  // Starts `pod`'s first container as a process; the error says why it cannot (yet).
  Status StartPod(const nlohmann::json& pod);
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

  std::atomic<bool> stopping_{false};
  std::thread thread_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  std::vector<std::unique_ptr<Proc>> procs_;
  std::vector<std::unique_ptr<Pending>> pending_;  // pods whose start failed so far, retried
  std::vector<std::string> errors_;
  bool stopped_ = false;

  mutable std::mutex log_mu_;  // taken after mu_ when both are held
  // Guarded by log_mu_.
  std::vector<std::string> lines_;
};

}  // namespace ringmaster::testing
