// Every program in build/bin speaks the same command-line language (base/cli.h): --help prints its
// flags and exits 0; a bad value, an unknown flag or a missing value names the flag and exits 2.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "tests/support/subprocess.h"

namespace ringmaster::testing {
namespace {

using std::chrono::seconds;

std::string Bin(const std::string& program) { return std::string(RINGMASTER_BIN_DIR) + "/" + program; }

// The programs CMake installs into build/bin (RINGMASTER_PROGRAMS, comma-separated).
std::vector<std::string> ListedPrograms() {
  std::vector<std::string> out;
  std::stringstream in(RINGMASTER_PROGRAMS);
  std::string name;
  while (std::getline(in, name, ',')) out.push_back(name);
  return out;
}

// Every executable file in build/bin that is not a test (*_test) or a libFuzzer target (fuzz_*).
std::vector<std::string> ProgramsInBin() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(RINGMASTER_BIN_DIR)) {
    const std::string name = e.path().filename().string();
    const bool test = name.size() > 5 && name.substr(name.size() - 5) == "_test";
    if (!e.is_regular_file() || test || name.rfind("fuzz_", 0) == 0) continue;
    if (::access(e.path().c_str(), X_OK) == 0) out.push_back(name);
  }
  return out;
}

TEST(CliTest, EveryProgramInBinAnswersHelp) {
  std::vector<std::string> found = ProgramsInBin();
  for (const std::string& listed : ListedPrograms()) {
    EXPECT_NE(std::find(found.begin(), found.end(), listed), found.end())
        << listed << " is not in " << RINGMASTER_BIN_DIR;
  }
  for (const std::string& program : found) {
    auto r = RunCommand({Bin(program), "--help"}, seconds(30));
    ASSERT_OK(r) << program;
    EXPECT_EQ(r->exit_code, 0) << program << ": " << r->err;
    EXPECT_NE(r->out.find("--help"), std::string::npos) << program << " printed:\n" << r->out;
    EXPECT_TRUE(r->err.empty()) << program << ": " << r->err;
  }
}

struct BadCommandLine {
  std::vector<std::string> argv;  // argv[0] a program in build/bin
  std::string named;              // what the error must name
};

TEST(CliTest, ABadCommandLineNamesTheFlagAndExits2) {
  const std::vector<BadCommandLine> cases = {
      {{"ringmaster-run", "--np", "4abc", "--", "true"}, "--np"},
      {{"ringmaster-run", "--np", "-1", "--", "true"}, "--np"},
      {{"ringmaster-run", "--chaos", "kill@5x", "--", "true"}, "--chaos"},
      {{"ringmaster-run", "--np"}, "--np"},
      {{"ringmaster-run", "--np", "2"}, "no worker command"},
      {{"ringmaster-run", "--startup-timeout-s", "0", "--", "true"}, "--startup-timeout-s"},
      {{"ringmaster-launch", "--processes", "0", "--", "true"}, "--processes"},
      {{"ringmaster-launch", "--processes", "2"}, "no command"},
      {{"ringmaster-perf", "allreduce", "--np", "4abc"}, "--np"},
      {{"ringmaster-perf", "allreduce", "--max-bytes", "1Q"}, "--max-bytes"},
      {{"ringmaster-operator", "--workers", "-1"}, "--workers"},
      {{"ringmaster-operator", "--bogus"}, "--bogus"},
      {{"ringmaster-operator", "--lease-duration", "soon"}, "--lease-duration"},
      {{"ringmaster-train-example", "--steps", "4abc"}, "--steps"},
      {{"ringmaster-train-example", "--hierarchical", "maybe"}, "--hierarchical"},
      {{"ringmaster-kube-bench", "--pods", "0"}, "--pods"},
      {{"ringmaster-elastic-bench", "--sizes", "2,x"}, "--sizes"},
      {{"ringmaster-checkpoint-bench", "--blobs"}, "--blobs"},
      {{"ringmaster-operator-bench", "--jobs", "1x"}, "--jobs"},
  };
  for (const BadCommandLine& c : cases) {
    std::vector<std::string> argv = c.argv;
    argv[0] = Bin(argv[0]);
    std::string shown;
    for (const auto& a : c.argv) shown += a + " ";
    auto r = RunCommand(argv, seconds(30));
    ASSERT_OK(r) << shown;
    EXPECT_EQ(r->exit_code, 2) << shown << "\n" << r->err;
    EXPECT_NE(r->err.find(c.named), std::string::npos) << shown << " did not name " << c.named << ":\n" << r->err;
  }
}

// ringmaster-train-example creates --out (and its parents) instead of failing with "No such file".
TEST(CliTest, TrainExampleCreatesItsOutDirectory) {
  const std::string root = ::testing::TempDir() + "cli_test_out." + std::to_string(::getpid());
  const std::string out = root + "/not/there/yet";
  std::filesystem::remove_all(root);
  // Strict launcher timeouts, not a user's defaults (no deadline, 10 min to the first heartbeat).
  auto r = RunCommand({Bin("ringmaster-run"),
                       "--np",
                       "1",
                       "--out",
                       root + "/run",
                       "--heartbeat-timeout-ms",
                       "2000",
                       "--startup-timeout-s",
                       "60",
                       "--deadline-s",
                       "60",
                       "--",
                       Bin("ringmaster-train-example"),
                       "--steps",
                       "2",
                       "--samples",
                       "8",
                       "--batch",
                       "4",
                       "--out",
                       out},
                      seconds(90));
  ASSERT_COMMAND_OK(r);
  std::ifstream weights(out + "/weights.w0.txt");
  ASSERT_TRUE(weights) << out << "/weights.w0.txt is missing; the run said:\n" << r->err;
  int lines = 0;
  for (std::string line; std::getline(weights, line);) ++lines;
  EXPECT_EQ(lines, 8) << "one weight per feature (--features defaults to 8)";
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ringmaster::testing
