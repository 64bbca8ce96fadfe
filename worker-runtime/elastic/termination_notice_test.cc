// The first SIGTERM is a notice (recorded, the process lives on); the second kills as SIGTERM does; a
// program's own SIGTERM handler is never replaced. Each case runs in a child process: a signal's
// disposition is process-wide.
#include "worker-runtime/elastic/termination_notice.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace ringmaster::elastic {
namespace {

// Runs `body` in a child and returns its wait status.
template <typename Body>
int InChild(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(TerminationNoticeTest, TheFirstSigtermIsANoticeAndTheSecondKills) {
  const int status = InChild([] {
    if (!TerminationNotice::Install() || TerminationNotice::Received()) ::_exit(10);
    ::raise(SIGTERM);
    if (!TerminationNotice::Received()) ::_exit(11);  // alive, and it was recorded
    ::raise(SIGTERM);
    ::_exit(12);  // not reached: the second one kills
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit code " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(TerminationNoticeTest, EndAsSigtermEndsTheProcessAsSigtermWould) {
  const int status = InChild([] {
    TerminationNotice::Install();
    ::raise(SIGTERM);
    TerminationNotice::EndAsSigterm();
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

void ProgramsOwnHandler(int) { ::_exit(42); }

TEST(TerminationNoticeTest, AProgramsOwnHandlerWins) {
  const int status = InChild([] {
    std::signal(SIGTERM, ProgramsOwnHandler);
    if (TerminationNotice::Install()) ::_exit(10);
    ::raise(SIGTERM);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

}  // namespace
}  // namespace ringmaster::elastic
