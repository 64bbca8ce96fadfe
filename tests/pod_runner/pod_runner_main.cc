// ringmaster-pod-runner: runs a job's pods on KWOK's fake nodes as local processes (pod_runner/pod_runner.h)
// until SIGINT/SIGTERM or --deadline-s, then kills them. For the last act of `make demo` (tests/harness/demo.sh)
// and a person's experiments:
//
//   ringmaster-pod-runner --kubeconfig build/cluster/kubeconfig --namespace default --job demo
//       --bin-dir build/bin --work-dir /tmp/demo-pods [--deadline-s 120]
#include <signal.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "base/cli.h"
#include "tests/pod_runner/pod_runner.h"

namespace {

constexpr char kDescription[] =
    "ringmaster-pod-runner: runs the pods of TrainingJob --job (label ringmaster.io/job-name) that KWOK reports\n"
    "Running as local processes (their commands found in --bin-dir), reports their exits through KWOK's stage\n"
    "labels, and kills a pod's process when the pod is deleted or its node goes NotReady. Stops on\n"
    "SIGINT/SIGTERM or after --deadline-s.";

struct Flags {
  ringmaster::testing::PodRunnerOptions runner;
  long deadline_s = 0;  // 0: never
  bool help = false;
};

std::unique_ptr<CLI::App> NewApp(Flags& f) {
  auto app = ringmaster::cli::NewApp("ringmaster-pod-runner", kDescription);
  app->add_option("--kubeconfig", f.runner.kubeconfig, "the cluster's admin kubeconfig")->required();
  app->add_option("--namespace", f.runner.ns, "the pods' namespace")->required();
  app->add_option("--job", f.runner.job, "the TrainingJob whose pods to run (their label ringmaster.io/job-name)")
      ->required();
  app->add_option("--bin-dir", f.runner.bin_dir,
                  "a container's command is found here by its base name (its image is ignored)")
      ->required();
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
