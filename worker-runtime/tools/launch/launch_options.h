// ringmaster-launch's command line, parsed once into LaunchOptions (base/cli.h: CLI11).
//
//   ringmaster-launch --processes K [--grace-s S] -- COMMAND [ARGS...]
//
// Errors: ParseLaunchOptions returns InvalidArgument naming the flag or the problem (--processes missing or
// out of 1..kMaxProcesses, a bad --grace-s, an unknown flag, no command after --); main() prints it as one
// line and exits 2 (cli::ExitEarly).
// Ownership: values. Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::launch {

inline constexpr char kProgram[] = "ringmaster-launch";
inline constexpr int kMaxProcesses = 64;

struct LaunchOptions {
  int processes = 0;                 // --processes: ranks in this pod, 1..kMaxProcesses (required)
  std::chrono::seconds grace{30};    // --grace-s: SIGTERM, then this long, then SIGKILL
  std::vector<std::string> command;  // after --: the command each process runs (argv[0] looked up in PATH)
  bool help = false;                 // --help: print LaunchUsage() and exit 0
};

// Parses the arguments after argv[0].
StatusOr<LaunchOptions> ParseLaunchOptions(const std::vector<std::string>& args);

// The --help text: what the program does, every flag with its default, and the environment it reads.
std::string LaunchUsage();

}  // namespace ringmaster::launch
