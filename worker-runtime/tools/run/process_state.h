// A process's scheduling state as /proc/<pid>/stat says it, for the chaos actions that freeze a worker
// (SIGSTOP) and must know it has stopped before they look at what it wrote (save_killer.h,
// collective_killer.h). Linux only.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace ringmaster::run {

// The state letter of `pid` (R, S, D, T, t, Z, ...); 0 when there is no such process.
char ProcessState(pid_t pid);

// Waits up to `limit` until `pid` is stopped (T or t). False when it did not stop in time or is gone (a zombie
// or reaped).
bool WaitUntilStopped(pid_t pid, std::chrono::milliseconds limit);

}  // namespace ringmaster::run
