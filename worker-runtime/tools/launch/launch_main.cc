// ringmaster-launch: a pod's entrypoint for a TrainingJob with spec.processesPerPod > 1. The operator wraps
// the worker container's command (and the kubelet appends its args):
//
//   ringmaster-launch --processes K [--grace-s S] -- COMMAND [ARGS...]
//
// K = 1 execs COMMAND as is. K > 1 starts K copies, each told its worker id, ports and GPU
// (pod_processes.h), relays their output prefixed "[i] " (output_relay.h) and supervises them as one unit
// of failure (supervisor.h). Exit status: see supervisor.h; 2 for a bad command line or environment
// (one line on stderr saying what is wrong and what to do); 127/126 when K = 1 and COMMAND cannot be run.
#include <cstdio>

#include "api/worker_env.h"
#include "base/cli.h"
#include "worker-runtime/tools/launch/launch_options.h"
#include "worker-runtime/tools/launch/pod_processes.h"
#include "worker-runtime/tools/launch/supervisor.h"

namespace rl = ringmaster::launch;

int main(int argc, char** argv) {
  auto options = rl::ParseLaunchOptions(ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly(rl::kProgram, options, rl::LaunchUsage)) return *exit_code;
  if (options->processes == 1) {
    ringmaster::Status s = rl::ExecCommand(options->command);  // returns only when it failed
    std::fprintf(stderr, "%s: %s\n", rl::kProgram, s.message().c_str());
    return s.code() == ringmaster::StatusCode::kNotFound ? 127 : 126;
  }
  auto pod = rl::ReadPodEnvironment(ringmaster::api::EnvironmentSnapshot(), options->processes);
  if (!pod.ok()) {
    std::fprintf(stderr, "%s: %s\n", rl::kProgram, pod.status().message().c_str());
    return ringmaster::cli::kExitUsage;
  }
  return rl::RunPod(*options, *pod);
}
