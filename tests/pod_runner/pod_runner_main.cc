// ringmaster-pod-runner: runs a job's pods on KWOK's fake nodes as local processes (pod_runner/pod_runner.h)
// until SIGINT/SIGTERM or --deadline-s, then kills them. For `make demo` and a person's experiments:
//
//   ringmaster-pod-runner --kubeconfig build/cluster/kubeconfig --namespace default --job demo
//       --bin-dir build/bin --work-dir /tmp/demo-pods
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "pod_runner/pod_runner.h"

namespace {

constexpr char kUsage[] =
    "usage: ringmaster-pod-runner --kubeconfig FILE --namespace NS --job NAME --bin-dir DIR --work-dir DIR "
    "[--deadline-s N]\n"
    "Runs the pods of TrainingJob NAME (label ringmaster.io/job-name) that KWOK reports Running as local\n"
    "processes, reports their exits through KWOK's stage labels, and kills a pod's process when the pod\n"
    "is deleted or its node goes NotReady. Stops on SIGINT/SIGTERM or after --deadline-s (0: never).\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "ringmaster-pod-runner: %s\n%s", message.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ringmaster::testing::PodRunnerOptions o;
  long deadline_s = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return Fail("flag " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--kubeconfig") o.kubeconfig = v;
    else if (a == "--namespace") o.ns = v;
    else if (a == "--job") o.job = v;
    else if (a == "--bin-dir") o.bin_dir = v;
    else if (a == "--work-dir") o.work_dir = v;
    else if (a == "--deadline-s") {
      char* end = nullptr;
      deadline_s = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || deadline_s < 0) return Fail("--deadline-s takes a whole number of seconds");
    } else {
      return Fail("unknown flag '" + a + "'");
    }
  }
  if (o.kubeconfig.empty() || o.ns.empty() || o.job.empty() || o.bin_dir.empty() || o.work_dir.empty()) {
    return Fail("--kubeconfig, --namespace, --job, --bin-dir and --work-dir are required");
  }
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
