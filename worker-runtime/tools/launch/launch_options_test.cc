#include "worker-runtime/tools/launch/launch_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/status_test_macros.h"

namespace ringmaster::launch {
namespace {

TEST(LaunchOptionsTest, ProcessesGraceAndTheCommandWithItsOwnFlags) {
  auto o = ParseLaunchOptions(
      {"--processes", "4", "--grace-s", "5", "--", "python", "train.py", "--processes", "9", "--", "-x"});
  ASSERT_OK(o);
  EXPECT_EQ(o->processes, 4);
  EXPECT_EQ(o->grace, std::chrono::seconds(5));
  EXPECT_EQ(o->command, (std::vector<std::string>{"python", "train.py", "--processes", "9", "--", "-x"}));
}

TEST(LaunchOptionsTest, GraceDefaultsTo30Seconds) {
  auto o = ParseLaunchOptions({"--processes", "2", "--", "true"});
  ASSERT_OK(o);
  EXPECT_EQ(o->grace, std::chrono::seconds(30));
  EXPECT_NE(LaunchUsage().find("=30"), std::string::npos) << LaunchUsage();
}

TEST(LaunchOptionsTest, BadInputIsRefusedNamingTheProblem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--processes", "0", "--", "true"}, "--processes"},
      {{"--processes", "65", "--", "true"}, "--processes"},
      {{"--processes", "two", "--", "true"}, "--processes"},
      {{"--", "true"}, "--processes"},
      {{"--processes", "2"}, "no command"},
      {{"--processes", "2", "--"}, "no command"},
      {{"--processes", "2", "--grace-s", "-1", "--", "true"}, "--grace-s"},
      {{"--processes", "2", "--bogus", "--", "true"}, "--bogus"},
  };
  for (const auto& [args, named] : cases) {
    auto o = ParseLaunchOptions(args);
    ASSERT_FALSE(o.ok()) << ::testing::PrintToString(args);
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(named), std::string::npos) << o.status();
  }
}

TEST(LaunchOptionsTest, HelpNeedsNothingElse) {
  auto o = ParseLaunchOptions({"--help"});
  ASSERT_OK(o);
  EXPECT_TRUE(o->help);
  const std::string usage = LaunchUsage();
  for (const char* word : {"--processes", "--grace-s", "RINGMASTER_POD_NAME", "LOCAL_RANK"}) {
    EXPECT_NE(usage.find(word), std::string::npos) << word << " missing from:\n" << usage;
  }
}

}  // namespace
}  // namespace ringmaster::launch
