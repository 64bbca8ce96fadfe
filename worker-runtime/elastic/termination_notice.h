// The kubelet's SIGTERM as a notice, not a kill. A worker pod being deleted -- preempted, evicted, drained --
// gets SIGTERM and its grace period; the operator sees the deletion at the same moment and publishes a
// Disrupted generation without the worker, which then leaves at the next step boundary with its work
// committed (boundary_switch.h) and exits 0. So the first SIGTERM only records when it came; the elastic
// driver ends the process as SIGTERM would when the operator does not act on it (the worker is still a
// member TerminationNotice::kOperatorWait later: the job was deleted, or no operator runs) or when the
// worker is in no generation at all. A second SIGTERM kills at once (SA_RESETHAND).
//
// Process-wide by nature (a signal's disposition is): installed once, by a worker whose membership comes
// from the operator (worker_setup.h), and only over SIGTERM's default action -- a program's own handler wins.
// Thread-safety: every function may be called from any thread; the handler is async-signal-safe.
#pragma once

#include <chrono>
#include <optional>

namespace ringmaster::elastic {

class TerminationNotice {
 public:
  // How long a worker that got SIGTERM waits for a generation without it before it ends as SIGTERM would.
  static constexpr std::chrono::seconds kOperatorWait{5};

  // Installs the handler unless SIGTERM already has one. Idempotent; false when a handler was there.
  static bool Install();
  // When the first SIGTERM arrived; nullopt before (or without the handler).
  static std::optional<std::chrono::steady_clock::time_point> Received();
  // Ends the process with SIGTERM's default action (exit status 128 + 15).
  [[noreturn]] static void EndAsSigterm();
};

}  // namespace ringmaster::elastic
