// ringmaster-run's command line, parsed once into LauncherOptions (base/cli.h: CLI11).
//
//   ringmaster-run --np 4 --min 2 --max 6 [--chaos SPEC] [--out DIR] -- COMMAND...
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/tools/run/chaos_spec.h"

namespace ringmaster::run {

struct LauncherOptions {
  int np = 1, min = 1, max = 64;
  std::vector<ChaosEvent> chaos;
  std::chrono::milliseconds chaos_gap{300};
  std::chrono::milliseconds pause{2000};
  uint64_t chaos_seed = 1;
  int workers_per_node = 0;  // > 0: worker slot i runs on simulated node "node<i/K>" (else all on "localhost")
  // A user's defaults (a script that imports torch takes seconds to start; a GC pause or a slow save must not
  // kill a worker); tests and benches pass strict values. Before a worker's first heartbeat only
  // startup_timeout applies, after it heartbeat_timeout.
  std::chrono::milliseconds heartbeat_timeout{30000};
  std::chrono::milliseconds startup_timeout{600000};
  std::chrono::milliseconds deadline{0};  // the whole run; 0: none
  std::string out = "ringmaster-run.out";
  std::string checkpoint_dir;  // passed to workers as RINGMASTER_CHECKPOINT_DIR; watched by killsave
  std::string secret = "ringmaster-local-secret";
  std::vector<std::string> command;  // the worker command line
  bool help = false;                 // --help: print LauncherUsage() and exit 0
};

// Parses argv[1..argc). Errors: InvalidArgument naming the flag (a bad value, an unknown flag, no
// worker command, --min/--np/--max out of order, killsave without --checkpoint-dir).
StatusOr<LauncherOptions> ParseLauncherOptions(int argc, char** argv);

// The --help text: every flag with its default, and the chaos SPEC.
std::string LauncherUsage();

}  // namespace ringmaster::run
