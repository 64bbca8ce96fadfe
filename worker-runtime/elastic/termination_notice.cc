#include "worker-runtime/elastic/termination_notice.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>

namespace ringmaster::elastic {
namespace {

// steady_clock ticks of the first SIGTERM; 0 before. A lock-free atomic: safe to store from a handler.
std::atomic<std::chrono::steady_clock::rep> received_at{0};
static_assert(std::atomic<std::chrono::steady_clock::rep>::is_always_lock_free);

void OnSigterm(int) {
  // clock_gettime is async-signal-safe; steady_clock::now() is a call to it.
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  received_at.store(now == 0 ? 1 : now);
  static constexpr char kLine[] =
      "ringmaster: SIGTERM: leaving at the next step boundary once the operator removes this worker "
      "(a second SIGTERM ends it now)\n";
  (void)!::write(STDERR_FILENO, kLine, sizeof kLine - 1);
}

}  // namespace

bool TerminationNotice::Install() {
  struct sigaction current{};
  if (::sigaction(SIGTERM, nullptr, &current) != 0) return false;
  if (current.sa_handler == OnSigterm) return true;
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) return false;
  struct sigaction mine{};
  mine.sa_handler = OnSigterm;
  sigemptyset(&mine.sa_mask);
  mine.sa_flags = SA_RESETHAND | SA_RESTART;  // the second SIGTERM takes the default action
  return ::sigaction(SIGTERM, &mine, nullptr) == 0;
}

std::optional<std::chrono::steady_clock::time_point> TerminationNotice::Received() {
  const auto at = received_at.load();
  if (at == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(at));
}

void TerminationNotice::EndAsSigterm() {
  std::signal(SIGTERM, SIG_DFL);
  std::raise(SIGTERM);
  std::_Exit(128 + SIGTERM);  // SIGTERM blocked: end with its status anyway
}

}  // namespace ringmaster::elastic
