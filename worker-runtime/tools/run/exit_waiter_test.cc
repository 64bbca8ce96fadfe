#include "worker-runtime/tools/run/exit_waiter.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace ringmaster::run {
namespace {

using namespace std::chrono_literals;

// A child's exit ends Wait() long before its timeout (an hour here): the launcher learns of a dead worker at
// once. (Where pidfd_open is unavailable Wait() would sleep the hour: the test's own timeout says so.)
TEST(ExitWaiterTest, AChildsExitEndsTheWait) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::usleep(50 * 1000);
    ::_exit(0);
  }
  ExitWaiter waiter;
  waiter.Watch(child);
  waiter.Wait(std::chrono::hours(1));
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, WNOHANG), child) << "Wait() returned before the child exited";
  waiter.Forget(child);
}

TEST(ExitWaiterTest, WithNothingWatchedItSleepsTheTimeout) {
  ExitWaiter waiter;
  const auto start = std::chrono::steady_clock::now();
  waiter.Wait(30ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
}

}  // namespace
}  // namespace ringmaster::run
