#include "tools/run/launcher_options.h"

#include <gtest/gtest.h>

#include <array>

#include "base/status_test_macros.h"

namespace ringmaster::elastic {
namespace {

// ringmaster-run with a user's defaults, as `horovodrun` is typed: no run deadline, a worker's heartbeat
// clock starting at its first heartbeat with minutes to get there (importing torch takes seconds), and
// 30 s of silence after that. Tests and benches pass their own strict values.
TEST(LauncherOptionsTest, DefaultsAreAUsersNoDeadlineAndMinutesToStart) {
  std::array<char*, 3> argv = {const_cast<char*>("ringmaster-run"), const_cast<char*>("--"), const_cast<char*>("true")};
  auto options = ParseLauncherOptions(static_cast<int>(argv.size()), argv.data());
  ASSERT_OK(options);
  EXPECT_EQ(options->deadline.count(), 0) << "no run deadline unless asked";
  EXPECT_EQ(options->startup_timeout, std::chrono::minutes(10));
  EXPECT_EQ(options->heartbeat_timeout, std::chrono::seconds(30));
}

TEST(LauncherOptionsTest, StartupTimeoutIsParsedInSeconds) {
  std::array<char*, 5> argv = {const_cast<char*>("ringmaster-run"), const_cast<char*>("--startup-timeout-s"),
                               const_cast<char*>("90"), const_cast<char*>("--"), const_cast<char*>("true")};
  auto options = ParseLauncherOptions(static_cast<int>(argv.size()), argv.data());
  ASSERT_OK(options);
  EXPECT_EQ(options->startup_timeout, std::chrono::seconds(90));
}

}  // namespace
}  // namespace ringmaster::elastic
