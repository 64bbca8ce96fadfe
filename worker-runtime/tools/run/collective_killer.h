// The killcoll chaos action: SIGKILL a worker while it is inside a collective (its phase file says "C",
// phase_file.h), not at a step boundary: the case where a peer's death leaves the survivors' collective half
// done, which the commit agreement (worker-runtime/README.md, "Commit agreement") must never let commit.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "base/subprocess.h"

namespace ringmaster::run {

// Kills `worker` inside a collective and returns the step whose collective it was in. Reading the phase
// file of a running worker could see "C" just before the collective returns, so each try freezes the worker
// first (SIGSTOP), waits until /proc says it stopped, and reads `phase_file` then: "C" -> SIGKILL (the worker
// dies stopped, inside); anything else (outside, no file yet, a record being created) -> SIGCONT, ~1 ms, and
// again. The caller reaps the worker.
// Errors: DeadlineExceeded when no try caught it inside within `limit` (it is left running); FailedPrecondition
// when the worker has ended; Internal when a signal cannot be sent. Blocks up to `limit` (and a second more
// while a frozen worker does not stop).
StatusOr<int64_t> KillInsideCollective(Subprocess& worker, const std::string& phase_file,
                                       std::chrono::milliseconds limit);

}  // namespace ringmaster::run
