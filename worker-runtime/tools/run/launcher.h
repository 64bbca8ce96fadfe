// The local elastic launcher behind ringmaster-run (launcher_main.cc).
//
// Membership rule (the operator's): every change writes a record with a
// strictly larger generation; survivors keep their relative order (rank 0
// stays rank 0 unless it is lost), newcomers are appended. The coordinator is
// rank 0's store address.
//
// Chaos SPEC: comma-separated events ACTION@STEP[:ARG], each fired once the
// workers' committed step (from their heartbeat files) reaches STEP and at
// least --chaos-gap ms after the previous event:
//   kill@S:R     SIGKILL the worker at rank R (R=0: the coordinator)
//   killsave@S:R SIGKILL rank R while a checkpoint save is being written (a temp
//                directory in --checkpoint-dir; the launcher polls for one for up to
//                10 s and fails the run when none appears)
//   stop@S:R     SIGSTOP it (detected by the heartbeat timeout, then SIGKILLed)
//   pause@S:R    SIGSTOP it for --pause-ms, then SIGCONT (with a long heartbeat timeout
//                the membership does not change: the workers rebuild the same generation)
//   add@S:N      start N new workers (one generation)
//   killadd@S:R  SIGKILL rank R and at once add a worker: two generations back to back
//   random@S:N   N events from step S on, one every 4 steps, each a kill, stop, killadd or
//                add of a random rank drawn from --chaos-seed (an add when at --min)
// Without --chaos nothing is injected.
//
// --workers-per-node K places worker slot i on a simulated node "node<i/K>" in
// the records (a replacement gets a new slot, so nodes fill and empty as on a
// cluster); programs that split process sets by node see them change.
//
// Thread-safety: single-threaded program.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::elastic {

struct ChaosEvent {
  std::string action;  // "random": drawn when it fires
  int64_t step = 0;
  int arg = 0;
};

struct LauncherOptions {
  int np = 1, min = 1, max = 64;
  std::vector<ChaosEvent> chaos;
  std::chrono::milliseconds chaos_gap{300};
  std::chrono::milliseconds pause{2000};
  uint64_t chaos_seed = 1;
  int workers_per_node = 0;  // > 0: worker slot i runs on simulated node "node<i/K>" (else all on "localhost")
  std::chrono::milliseconds heartbeat_timeout{2000};
  std::chrono::milliseconds deadline{120000};  // the whole run
  std::string out = "ringmaster-run.out";
  std::string checkpoint_dir;  // passed to workers as RINGMASTER_CHECKPOINT_DIR; watched by killsave
  std::string secret = "ringmaster-local-secret";
  std::vector<std::string> command;  // the worker command line
};

// Errors: InvalidArgument naming the flag.
StatusOr<LauncherOptions> ParseLauncherOptions(int argc, char** argv);
StatusOr<std::vector<ChaosEvent>> ParseChaos(const std::string& spec);

// Runs the job; returns the process exit status.
int RunLauncher(const LauncherOptions& options);

}  // namespace ringmaster::elastic
