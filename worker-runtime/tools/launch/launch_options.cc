#include "worker-runtime/tools/launch/launch_options.h"

#include <cstdint>
#include <memory>

#include "api/names.h"
#include "base/cli.h"

namespace ringmaster::launch {
namespace {

std::string Description() {
  return std::string(kProgram) +
         ": start a pod's K ranks (a TrainingJob's spec.processesPerPod; the operator wraps the worker\n"
         "container's command with it) and supervise them as one unit of failure.\n"
         "  " +
         kProgram +
         " --processes K [--grace-s S] -- COMMAND [ARGS...]\n"
         "K = 1 execs COMMAND as is. K > 1 starts K copies, process i with " +
         std::string(api::env::kWorkerId) + "=<pod>[:i],\n" + std::string(api::env::kStorePort) + " and " +
         std::string(api::env::kHealthPort) + " = base + i (a health port of 0 stays 0), " +
         std::string(api::env::kDevice) +
         "=i,\n"
         "LOCAL_RANK=i and LOCAL_WORLD_SIZE=K; their output lines are prefixed \"[i] \". When one exits non-zero\n"
         "or by a signal the others get SIGTERM, SIGKILL --grace-s later, and the launcher exits with its\n"
         "code (128+signal for a signal); SIGTERM/SIGINT to the launcher are forwarded the same way. Exit\n"
         "status: the first non-zero code of a process, 0 when all exit 0, 2 for a bad command line or\n"
         "environment.";
}

std::string Footer() {
  return "Environment (K > 1):\n  " + std::string(api::env::kPodName) + "  the pod's name (required)\n  " +
         std::string(api::env::kStorePort) + "  process 0's store port (else " +
         std::string(api::env::kCoordinatorPort) + ", else " + std::to_string(api::kCoordinatorPort) + ")\n  " +
         std::string(api::env::kHealthPort) + "  process 0's health port (else " +
         std::to_string(api::kWorkerHealthPort) + "; 0: any free port)";
}

std::unique_ptr<CLI::App> NewLaunchApp(LaunchOptions& o) {
  auto app = cli::NewApp(kProgram, Description(), Footer());
  app->add_option("--processes", o.processes, "processes (ranks) to start in this pod")
      ->required()
      ->check(CLI::Range(1, kMaxProcesses))
      ->default_str("");  // no default: required
  app->add_option_function<int64_t>(
         "--grace-s", [&o](int64_t s) { o.grace = std::chrono::seconds(s); },
         "seconds the processes get after SIGTERM before SIGKILL")
      ->check(CLI::Range(int64_t{0}, int64_t{86400}))
      ->default_str(std::to_string(o.grace.count()));
  app->add_option("command", o.command, "the command each process runs (after --)");
  return app;
}

}  // namespace

std::string LaunchUsage() { return cli::UsageOf<LaunchOptions>(NewLaunchApp); }

StatusOr<LaunchOptions> ParseLaunchOptions(const std::vector<std::string>& args) {
  RINGMASTER_ASSIGN_OR_RETURN(LaunchOptions o, cli::ParseInto<LaunchOptions>(NewLaunchApp, args));
  if (o.help) return o;
  if (o.command.empty()) {
    return InvalidArgumentError("no command after --: give the command each process runs, as in " +
                                std::string(kProgram) + " --processes " + std::to_string(o.processes) +
                                " -- python train.py");
  }
  return o;
}

}  // namespace ringmaster::launch
