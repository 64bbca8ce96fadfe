// ExitWaiter: sleeps until one of the watched processes exits, or a timeout.
//
// The launcher's supervision loop used to sleep a fixed 20 ms between passes, so a
// killed worker left the membership on average 10 ms late, and every survivor's
// rebuild waits for that new membership. A pidfd (Linux 5.3+) becomes readable
// when its process exits: Wait() polls them all and returns at the first exit.
// Where pidfd_open is unavailable (an old kernel, a seccomp filter) a process is
// simply not watched and Wait() sleeps the whole timeout, as before.
//
// Ownership: owns the pidfds. Thread-safety: one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>

namespace ringmaster::run {

class ExitWaiter {
 public:
  ExitWaiter() = default;
  ~ExitWaiter();
  ExitWaiter(const ExitWaiter&) = delete;
  ExitWaiter& operator=(const ExitWaiter&) = delete;

  // Starts watching `pid` (a child not yet reaped). Best effort: see the header comment.
  void Watch(pid_t pid);
  // Stops watching `pid` (after it was reaped: its pid may be reused).
  void Forget(pid_t pid);
  // Until a watched process has exited (it stays readable until Forget), or `timeout` passed.
  void Wait(std::chrono::milliseconds timeout);

 private:
  std::map<pid_t, int> pidfds_;
};

}  // namespace ringmaster::run
