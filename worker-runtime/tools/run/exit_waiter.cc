#include "worker-runtime/tools/run/exit_waiter.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace ringmaster::run {

ExitWaiter::~ExitWaiter() {
  for (const auto& [pid, fd] : pidfds_) ::close(fd);
}

void ExitWaiter::Watch(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) pidfds_[pid] = static_cast<int>(fd);
#else
  (void)pid;
#endif
}

void ExitWaiter::Forget(pid_t pid) {
  auto it = pidfds_.find(pid);
  if (it == pidfds_.end()) return;
  ::close(it->second);
  pidfds_.erase(it);
}

void ExitWaiter::Wait(std::chrono::milliseconds timeout) {
  if (pidfds_.empty()) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  std::vector<pollfd> fds;
  fds.reserve(pidfds_.size());
  for (const auto& [pid, fd] : pidfds_) fds.push_back({fd, POLLIN, 0});
  ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
}

}  // namespace ringmaster::run
