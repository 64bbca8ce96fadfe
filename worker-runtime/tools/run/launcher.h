// The local elastic launcher behind ringmaster-run (launcher_main.cc).
//
// Membership rule (the operator's): every change writes a record with a
// strictly larger generation; survivors keep their relative order (rank 0
// stays rank 0 unless it is lost), newcomers are appended. The coordinator is
// rank 0's store address.
//
// Chaos SPEC: comma-separated events ACTION@STEP[:ARG], each fired once the
// workers' committed step (from their heartbeat files) reaches STEP, at least
// --chaos-gap ms after the previous event, and after a worker an earlier event
// killed has left the membership (so rank R names a live worker):
//   kill@S:R     SIGKILL the worker at rank R (R=0: the coordinator)
//   killsave@S:R SIGKILL rank R while a checkpoint save is being written (a temp
//                directory in --checkpoint-dir; the launcher polls for one for up to
//                10 s and fails the run when none appears)
//   killcoll@S:R SIGKILL rank R while it is inside a collective, then at once add a worker (two generations
//                back to back, as killadd). Each worker gets RINGMASTER_PHASE_FILE=OUT/phase.<worker>, where a
//                program that supports it says whether it is inside a collective (phase_file.h;
//                ringmaster-train-example does); the launcher freezes the worker and reads it until it says so,
//                for up to 10 s (collective_killer.h). Caught: "chaos: SIGKILL <id> (rank R) inside the
//                collective of step N"; not caught: "chaos: killcoll ... skipped" and the run goes on. The
//                end of the run prints how many were caught and skipped.
//   killcolls@S:N N killcoll events of a rank drawn from --chaos-seed as each fires, one every 2 steps from S
//                (the soak of kills inside collectives: elastic/elastic_collective_kill_test.cc)
//   stop@S:R     SIGSTOP it (detected by the heartbeat timeout, then SIGKILLed)
//   pause@S:R    SIGSTOP it for --pause-ms, then SIGCONT (with a long heartbeat timeout
//                the membership does not change: the workers rebuild the same generation)
//   add@S:N      start N new workers (one generation)
//   killadd@S:R  SIGKILL rank R and at once add a worker: two generations back to back
//   random@S:N   N events from step S on, one every 4 steps, each a kill, stop, killadd or
//                add of a random rank drawn from --chaos-seed (an add when at --min); never a killcoll,
//                which needs a worker that writes its phase file
// Without --chaos nothing is injected.
//
// --workers-per-node K places worker slot i on a simulated node "node<i/K>" in
// the records (a replacement gets a new slot, so nodes fill and empty as on a
// cluster); programs that split process sets by node see them change.
//
// The pieces: launcher_options.h (flags), chaos_spec.h (--chaos), worker_table.h (the process table
// and heartbeats), launcher_membership.h (the record), save_killer.h (killsave), collective_killer.h and
// phase_file.h (killcoll), process_state.h (has a frozen worker stopped).
// Thread-safety: single-threaded program.
#pragma once

#include "worker-runtime/tools/run/launcher_options.h"

namespace ringmaster::run {

// Runs the job; returns the process exit status (0: the training finished, 1 otherwise).
int RunLauncher(const LauncherOptions& options);

}  // namespace ringmaster::run
