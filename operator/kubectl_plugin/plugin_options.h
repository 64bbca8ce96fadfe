// kubectl-ringmaster's command line, parsed once at start into PluginOptions (base/cli.h: CLI11). kubectl runs
// the plugin for `kubectl ringmaster ...` with the words after `ringmaster`, so the flags are kubectl's:
// --kubeconfig, --context and -n/--namespace, before or after the command.
//
//   kubectl ringmaster status JOB
//   kubectl ringmaster events JOB
//   kubectl ringmaster kill JOB --rank R
//   kubectl ringmaster drill JOB [--rank R] [--timeout 5m]
//
// Errors: ParsePluginFlags returns InvalidArgument with a message naming the flag or the missing command or
// argument (main prints it and exits 2, cli::kExitUsage). Thread-safety: values and pure functions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::kubectl_plugin {

inline constexpr char kProgram[] = "kubectl-ringmaster";

enum class Command { kStatus, kEvents, kKill, kDrill };

struct PluginOptions {
  Command command = Command::kStatus;
  std::string job;
  std::string kubeconfig;  // --kubeconfig; "": $KUBECONFIG, ~/.kube/config, then the in-cluster service account
  std::string context;     // --context; "": the kubeconfig's current-context
  std::string ns;          // -n/--namespace; "": the context's namespace, else "default"
  int32_t rank = -1;       // --rank: kill needs it; drill picks a random rank when it is -1
  std::chrono::seconds timeout{300};  // drill --timeout
  bool help = false;
  std::string help_text;  // with help: the help of the command asked about (or of the program)
};

// Parses argv without argv[0].
StatusOr<PluginOptions> ParsePluginFlags(const std::vector<std::string>& args);

// The program's --help text.
std::string UsageText();

}  // namespace ringmaster::kubectl_plugin
