#include "worker-runtime/tools/run/launcher_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/status_test_macros.h"

namespace ringmaster::run {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ParseLauncherOptions over `args` (argv[0] added).
StatusOr<LauncherOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ringmaster-run");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseLauncherOptions(static_cast<int>(argv.size()), argv.data());
}

// ringmaster-run with a user's defaults, as `horovodrun` is typed: no run deadline, a worker's heartbeat
// clock starting at its first heartbeat with minutes to get there (importing torch takes seconds), and
// 30 s of silence after that. Tests and benches pass their own strict values.
TEST(LauncherOptionsTest, DefaultsAreAUsersNoDeadlineAndMinutesToStart) {
  auto options = Parse({"--", "true"});
  ASSERT_OK(options);
  EXPECT_EQ(options->deadline.count(), 0) << "no run deadline unless asked";
  EXPECT_EQ(options->startup_timeout, std::chrono::minutes(10));
  EXPECT_EQ(options->heartbeat_timeout, seconds(30));
}

TEST(LauncherOptionsTest, TheTimeoutsAreParsedInTheirFlagsUnits) {
  auto options =
      Parse({"--startup-timeout-s", "90", "--heartbeat-timeout-ms", "2000", "--deadline-s", "120", "--", "true"});
  ASSERT_OK(options);
  EXPECT_EQ(options->startup_timeout, seconds(90));
  EXPECT_EQ(options->heartbeat_timeout, milliseconds(2000));
  EXPECT_EQ(options->deadline, seconds(120));
}

// The chaos harness passes its strict values first and a test's own after them.
TEST(LauncherOptionsTest, TheLastValueOfARepeatedFlagWins) {
  auto options = Parse({"--heartbeat-timeout-ms", "1500", "--heartbeat-timeout-ms", "60000", "--", "true"});
  ASSERT_OK(options);
  EXPECT_EQ(options->heartbeat_timeout, milliseconds(60000));
}

// A timeout of 0 would remove every worker at once; --deadline-s 0 is "no deadline".
TEST(LauncherOptionsTest, AZeroHeartbeatOrStartupTimeoutIsRefusedByName) {
  for (const char* flag : {"--heartbeat-timeout-ms", "--startup-timeout-s"}) {
    auto options = Parse({flag, "0", "--", "true"});
    ASSERT_FALSE(options.ok()) << flag;
    EXPECT_NE(options.status().ToString().find(flag), std::string::npos) << options.status();
  }
  ASSERT_OK(Parse({"--deadline-s", "0", "--", "true"}));
}

// The entry of --help that lists `flag` ("  --flag TYPE=DEFAULT\n   description"), up to the next flag.
std::string HelpEntry(const std::string& usage, const std::string& flag) {
  const size_t at = usage.find("  " + flag + " ");
  if (at == std::string::npos) return "";
  return usage.substr(at, usage.find("\n  -", at) - at);
}

TEST(LauncherOptionsTest, TheHelpStatesEachTimeoutsDefault) {
  const std::string usage = LauncherUsage();
  EXPECT_NE(HelpEntry(usage, "--startup-timeout-s").find("=600\n"), std::string::npos) << usage;
  EXPECT_NE(HelpEntry(usage, "--heartbeat-timeout-ms").find("=30000\n"), std::string::npos) << usage;
  const std::string deadline = HelpEntry(usage, "--deadline-s");
  EXPECT_NE(deadline.find("=0\n"), std::string::npos) << usage;
  EXPECT_NE(deadline.find("0: no deadline"), std::string::npos) << usage;
}

}  // namespace
}  // namespace ringmaster::run
