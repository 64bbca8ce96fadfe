// The shared command-line helper: help, errors that name the flag, the last of a repeated flag wins,
// values parsed by a project parser, and no exception out of Parse.
#include "base/cli.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::cli {
namespace {

struct Options {
  int np = 2;
  uint64_t seed = 1;
  std::string color = "red";
  std::vector<std::string> command;
};

StatusOr<std::string> ParseColor(const std::string& text) {
  if (text == "red" || text == "blue") return text;
  return InvalidArgumentError("'" + text + "' is not red or blue");
}

std::unique_ptr<CLI::App> NewTestApp(Options& o) {
  auto app = NewApp("prog", "prog: a test program.", "footer text");
  app->add_option("--np", o.np, "ranks")->check(CLI::Range(1, 256));
  app->add_option("--seed", o.seed, "seed")->check(NotNegative());
  AddParsed<std::string>(*app, "--color", &o.color, ParseColor, "red or blue", "red");
  app->add_option("command", o.command, "the rest");
  return app;
}

TEST(CliTest, ParsesValuesAndTheLastOfARepeatedFlagWins) {
  Options o;
  auto app = NewTestApp(o);
  auto parsed = Parse(*app, {"--np", "3", "--np=5", "--color", "blue", "--", "run", "--np", "9"});
  ASSERT_OK(parsed);
  EXPECT_EQ(*parsed, Parsed::kRun);
  EXPECT_EQ(o.np, 5);
  EXPECT_EQ(o.color, "blue");
  EXPECT_EQ(o.command, (std::vector<std::string>{"run", "--np", "9"}));
}

TEST(CliTest, HelpShowsEveryFlagWithItsDefault) {
  Options o;
  auto app = NewTestApp(o);
  auto parsed = Parse(*app, {"--np", "3", "--help", "--bogus"});
  ASSERT_OK(parsed);
  EXPECT_EQ(*parsed, Parsed::kHelp);
  std::string help = app->help();
  for (const char* text : {"prog: a test program.", "--np", "=2", "--seed", "--color", "=red", "footer text"}) {
    EXPECT_NE(help.find(text), std::string::npos) << text << " missing from:\n" << help;
  }
}

TEST(CliTest, ABadCommandLineIsInvalidArgumentNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--np", "4abc"}, "--np"},    {{"--np", "-1"}, "--np"},     {{"--np"}, "--np"},
      {{"--bogus", "1"}, "--bogus"}, {{"--seed", "-3"}, "--seed"}, {{"--color", "green"}, "not red or blue"},
  };
  for (const auto& [args, named] : cases) {
    Options o;
    auto app = NewTestApp(o);
    auto parsed = Parse(*app, args);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << args[0];
    EXPECT_NE(parsed.status().message().find(named), std::string::npos) << parsed.status();
  }
}

TEST(CliTest, ExitEarlyMapsTheOutcomeToAnExitCode) {
  auto help = [] { return std::string("help text\n"); };
  EXPECT_EQ(ExitEarly("prog", InvalidArgumentError("--np: bad"), false, help), kExitUsage);
  EXPECT_EQ(ExitEarly("prog", Status::Ok(), true, help), 0);
  EXPECT_EQ(ExitEarly("prog", Status::Ok(), false, help), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::cli
