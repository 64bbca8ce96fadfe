#include "tests/support/subprocess.h"

#include "base/subprocess.h"

namespace ringmaster::testing {

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                   const std::string& input) {
  if (argv.empty()) return InvalidArgumentError("RunCommand: empty argv");
  SpawnOptions options;
  options.argv = argv;
  options.in = options.out = options.err = Redirect::Pipe();  // own process group: a timeout kills its children too
  RINGMASTER_ASSIGN_OR_RETURN(Subprocess process, Subprocess::Start(options));
  Subprocess::Output output = process.Communicate(input, std::chrono::steady_clock::now() + timeout);
  if (output.timed_out) {
    process.Kill();
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    return DeadlineExceededError("command timed out after " + std::to_string(timeout.count()) + " ms: " + cmd +
                                 "\nstderr: " + output.err);
  }
  CommandResult result;
  result.exit_code = process.Wait().ShellCode();
  result.out = std::move(output.out);
  result.err = std::move(output.err);
  return result;
}

::testing::AssertionResult CommandSucceeded(const char* expression, const StatusOr<CommandResult>& result) {
  if (!result.ok()) return ::testing::AssertionFailure() << expression << " did not run: " << result.status();
  return CommandSucceeded(expression, *result);
}

::testing::AssertionResult CommandSucceeded(const char* expression, const CommandResult& result) {
  if (result.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expression << " exited " << result.exit_code << "; stderr:\n" << result.err;
}

}  // namespace ringmaster::testing
