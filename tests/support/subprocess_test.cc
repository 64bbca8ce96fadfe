#include "support/subprocess.h"

#include <gtest/gtest.h>
#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

using std::chrono::milliseconds;

TEST(RunCommandTest, CapturesOutputAndExitCode) {
  auto r = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_OK(r) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(RunCommandTest, FeedsStandardInput) {
  auto r = RunCommand({"cat"}, std::chrono::seconds(10), "hello\n");
  ASSERT_OK(r) << r.status();
  EXPECT_EQ(r->out, "hello\n");
}

TEST(RunCommandTest, KillsCommandPastDeadline) {
  auto start = std::chrono::steady_clock::now();
  auto r = RunCommand({"sleep", "30"}, milliseconds(300));
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RunCommandTest, MissingProgramExitsWith127) {
  auto r = RunCommand({"ringmaster-no-such-program"});
  ASSERT_OK(r) << r.status();
  EXPECT_EQ(r->exit_code, 127);
}

}  // namespace
}  // namespace ringmaster::testing
