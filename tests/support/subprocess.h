// Running a command to completion with a deadline, capturing what it prints: a thin wrapper over the
// one spawner, base/subprocess.h. Test support only: production code never shells out.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::testing {

struct CommandResult {
  int exit_code = -1;  // the exit status, or 128+signal when it was killed
  std::string out;     // standard output
  std::string err;     // standard error
  bool ok() const { return exit_code == 0; }
};

// Runs argv[0] (looked up in PATH) with `input` on its standard input, in its own process group. A
// command still running at `timeout` is killed with its group (SIGKILL) and reported as
// DeadlineExceeded; failing to start it is Internal; a program that cannot be executed exits 127.
// A command that runs and exits non-zero is not an error here: look at exit_code.
// Thread-safe (no shared state).
StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(60),
                                   const std::string& input = "");

// For ASSERT_COMMAND_OK(r) / EXPECT_COMMAND_OK(r): r (a CommandResult or StatusOr<CommandResult>) ran and exited 0; a
// failure prints the Status, or the exit code and what the command wrote to stderr.
::testing::AssertionResult CommandSucceeded(const char* expression, const StatusOr<CommandResult>& result);
::testing::AssertionResult CommandSucceeded(const char* expression, const CommandResult& result);

}  // namespace ringmaster::testing

#define ASSERT_COMMAND_OK(result) ASSERT_PRED_FORMAT1(::ringmaster::testing::CommandSucceeded, result)
#define EXPECT_COMMAND_OK(result) EXPECT_PRED_FORMAT1(::ringmaster::testing::CommandSucceeded, result)
