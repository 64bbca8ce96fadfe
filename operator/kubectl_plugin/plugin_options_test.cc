#include "operator/kubectl_plugin/plugin_options.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::kubectl_plugin {
namespace {

TEST(PluginOptionsTest, EachCommandWithItsFlags) {
  auto status = ParsePluginFlags({"status", "train"});
  ASSERT_OK(status);
  EXPECT_EQ(status->command, Command::kStatus);
  EXPECT_EQ(status->job, "train");
  EXPECT_EQ(status->ns, "");

  auto events = ParsePluginFlags({"-n", "team-a", "events", "train"});
  ASSERT_OK(events);
  EXPECT_EQ(events->command, Command::kEvents);
  EXPECT_EQ(events->ns, "team-a");

  auto kill = ParsePluginFlags({"kill", "train", "--rank", "2", "--kubeconfig", "/tmp/kc", "--context", "c"});
  ASSERT_OK(kill);
  EXPECT_EQ(kill->command, Command::kKill);
  EXPECT_EQ(kill->rank, 2);
  EXPECT_EQ(kill->kubeconfig, "/tmp/kc");  // kubectl's flags after the command too
  EXPECT_EQ(kill->context, "c");

  auto drill = ParsePluginFlags({"drill", "train", "--timeout", "90s", "--namespace", "ns"});
  ASSERT_OK(drill);
  EXPECT_EQ(drill->command, Command::kDrill);
  EXPECT_EQ(drill->rank, -1);  // random
  EXPECT_EQ(drill->timeout, std::chrono::seconds(90));
  EXPECT_EQ(drill->ns, "ns");

  auto default_timeout = ParsePluginFlags({"drill", "train", "--rank", "0"});
  ASSERT_OK(default_timeout);
  EXPECT_EQ(default_timeout->timeout, std::chrono::minutes(5));
  EXPECT_EQ(default_timeout->rank, 0);
}

struct Bad {
  std::vector<std::string> args;
  std::string named;  // what the message must name
};

TEST(PluginOptionsTest, ABadCommandLineNamesWhatIsWrong) {
  const std::vector<Bad> cases = {
      {{}, "no command: want status, events, kill or drill"},
      {{"-n", "ns", "--kubeconfig", "kc"}, "no command"},
      {{"-n", "ns", "explode", "train"}, "unknown command 'explode': want status, events, kill or drill"},
      {{"status"}, "JOB"},
      {{"explode", "train"}, "explode"},
      {{"kill", "train"}, "--rank"},
      {{"kill", "train", "--rank", "-1"}, "--rank"},
      {{"kill", "train", "--rank", "one"}, "--rank"},
      {{"drill", "train", "--timeout", "soon"}, "--timeout"},
      {{"drill", "train", "--timeout", "0s"}, "--timeout"},
      {{"status", "train", "--rank", "1"}, "--rank"},  // only kill and drill take it
      {{"status", "train", "--bogus"}, "--bogus"},
      {{"status", ""}, "JOB"},
  };
  for (const Bad& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    auto parsed = ParsePluginFlags(c.args);
    ASSERT_FALSE(parsed.ok()) << shown;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << shown;
    EXPECT_NE(parsed.status().message().find(c.named), std::string::npos)
        << shown << " did not name " << c.named << ": " << parsed.status();
  }
}

TEST(PluginOptionsTest, HelpIsTheCommandsOwn) {
  auto top = ParsePluginFlags({"--help"});
  ASSERT_OK(top);
  EXPECT_TRUE(top->help);
  for (const char* command : {"status", "events", "kill", "drill", "--kubeconfig", "--namespace"})
    EXPECT_NE(top->help_text.find(command), std::string::npos) << command << " missing from:\n" << top->help_text;

  auto drill = ParsePluginFlags({"drill", "--help"});
  ASSERT_OK(drill);
  EXPECT_TRUE(drill->help);
  EXPECT_NE(drill->help_text.find("--timeout"), std::string::npos) << drill->help_text;
  EXPECT_NE(drill->help_text, top->help_text);  // the command's own help, not the program's
  EXPECT_EQ(top->help_text, UsageText());
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin
