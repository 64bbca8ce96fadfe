// ringmaster-pod-runner: runs a job's pods on KWOK's fake nodes as local processes (pod_runner/pod_runner.h)
// until SIGINT/SIGTERM or --deadline-s, then kills them. For `make demo` and a person's experiments:
//
//   ringmaster-pod-runner --kubeconfig build/cluster/kubeconfig --namespace default --job demo
//       --bin-dir build/bin --work-dir /tmp/demo-pods
//   ringmaster-pod-runner ... --selector app=demo --bin-dir build/bin --work-dir /tmp/demo-pods   (any pods
//       matching a label selector)
//   ringmaster-pod-runner ... --pod-network   (each pod in a network namespace of its own; needs root)
#include <signal.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "base/cli.h"
#include "tests/pod_runner/pod_runner.h"

namespace {

constexpr char kDescription[] =
    "ringmaster-pod-runner: runs the pods of TrainingJob --job (label ringmaster.io/job-name), or the pods\n"
    "matching --selector, that KWOK reports Running as local processes (their commands found in --bin-dir),\n"
    "reports their exits through KWOK's stage labels, and kills a pod's process when the pod is deleted or its\n"
    "node goes NotReady. Stops on SIGINT/SIGTERM or after --deadline-s.";

struct Flags {
  ringmaster::testing::PodRunnerOptions runner;
  long deadline_s = 0;  // 0: never
  bool help = false;
};

std::unique_ptr<CLI::App> NewApp(Flags& f) {
  auto app = ringmaster::cli::NewApp("ringmaster-pod-runner", kDescription);
  app->add_option("--kubeconfig", f.runner.kubeconfig, "the cluster's admin kubeconfig")->required();
  app->add_option("--namespace", f.runner.ns, "the pods' namespace")->required();
  auto* pods = app->add_option_group("pods", "which pods to run (at least one)");
  pods->add_option("--job", f.runner.job, "the TrainingJob's name (its pods' label ringmaster.io/job-name)");
  pods->add_option("--selector", f.runner.label_selector,
                   "a label selector for the pods to run, instead of --job's label (--job then only names them)");
  pods->require_option(1, 2);
  app->add_option("--bin-dir", f.runner.bin_dir,
                  "a container's command is found here by its base name (its image is ignored)")
      ->required();
  app->add_flag("--pod-network", f.runner.pod_network,
                "each pod in a network namespace of its own on a bridge this runner creates, the apiserver relayed "
                "in (needs root; pod_network.h)");
  app->add_option("--work-dir", f.runner.work_dir, "where each pod gets its home, kubeconfig and log")->required();
  app->add_option("--deadline-s", f.deadline_s, "stop after this many seconds (0: never)")
      ->check(CLI::Range(0L, 10L * 365 * 24 * 3600));
  return app;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = ringmaster::cli::ParseInto<Flags>(NewApp, ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly<Flags>("ringmaster-pod-runner", flags, NewApp)) return *exit_code;
  const ringmaster::testing::PodRunnerOptions& o = flags->runner;
  const long deadline_s = flags->deadline_s;
  // SIGINT/SIGTERM are taken by sigtimedwait below; every thread inherits the blocked mask (the runner
  // resets it in the processes it starts).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto runner = ringmaster::testing::PodRunner::Start(o);
  if (!runner.ok()) {
    std::fprintf(stderr, "ringmaster-pod-runner: %s\n", runner.status().ToString().c_str());
    return 1;
  }
  timespec wait{deadline_s > 0 ? deadline_s : 365L * 24 * 3600, 0};
  int sig = sigtimedwait(&stop, nullptr, &wait);
  std::fprintf(stderr, "ringmaster-pod-runner: %s; stopping\n", sig > 0 ? "signal received" : "deadline reached");
  (*runner)->Stop();
  return 0;
}
