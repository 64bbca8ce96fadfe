#include "worker-runtime/testing/chaos_harness.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/subprocess.h"

namespace ringmaster::runtime_testing {

std::filesystem::path Root() {
  static const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("elastic_chaos_test." + std::to_string(::getpid()));
  return root;
}

namespace {

// `flags` split at spaces (the tests' flags hold no quoted spaces).
void AppendWords(const std::string& flags, std::vector<std::string>& argv) {
  std::istringstream in(flags);
  for (std::string word; in >> word;) argv.push_back(word);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `env` ("NAME=value ...", a value may be single-quoted) as variables.
EnvironmentList ParseAssignments(const std::string& env) {
  EnvironmentList out;
  std::istringstream in(env);
  for (std::string word; in >> word;) {
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    std::string value = word.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') value = value.substr(1, value.size() - 2);
    out.emplace_back(word.substr(0, eq), value);
  }
  return out;
}

// A program of the build, or its copy in $RINGMASTER_BIN_DIR when that is set (the GPU kit runs the
// suite from its own folder: tests/gpu_kit).
std::string Program(const char* built, const char* name) {
  const char* dir = std::getenv("RINGMASTER_BIN_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) + "/" + name : std::string(built);
}

}  // namespace

std::vector<std::string> TrainerCommand(const std::string& worker_flags) {
  std::vector<std::string> argv = {Program(RINGMASTER_TRAIN_EXAMPLE, "ringmaster-train-example"),
                                   "--steps",
                                   std::to_string(kSteps),
                                   "--samples",
                                   std::to_string(kSamples),
                                   "--batch",
                                   std::to_string(kBatch),
                                   "--seed",
                                   "7",
                                   "--timeout-ms",
                                   "8000"};
  AppendWords(worker_flags, argv);
  return argv;
}

int Launch(const std::string& out, const std::string& launcher_flags, const std::string& worker_flags,
           const std::string& env) {
  return LaunchCommand(out, launcher_flags, TrainerCommand(worker_flags), env);
}

// Runs ringmaster-run; returns its exit status.
int LaunchCommand(const std::string& out, const std::string& launcher_flags, const std::vector<std::string>& command,
                  const std::string& env) {
  // Strict values, not ringmaster-run's user defaults (30 s heartbeat timeout, 10 min to the first heartbeat,
  // no deadline): a stopped worker is seen within the test's time, the trainer beats within a second of its
  // start, and a hung run fails instead of waiting for ctest's timeout. The test's flags come after (the
  // last value of a flag wins).
  std::vector<std::string> argv = {Program(RINGMASTER_RUN, "ringmaster-run"),
                                   "--out",
                                   out,
                                   "--deadline-s",
                                   "90",
                                   "--heartbeat-timeout-ms",
                                   "1500",
                                   "--startup-timeout-s",
                                   "30"};
  AppendWords(launcher_flags, argv);
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  std::string shown;
  for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + a;
  std::fprintf(stderr, "$ %s > %s.log\n", shown.c_str(), out.c_str());
  // The output goes to OUT.log (for the test to read) and then to the test log.
  std::filesystem::create_directories(out);
  std::filesystem::remove(out + ".log");
  SpawnOptions options;
  options.argv = argv;
  options.env = ParseAssignments(env);  // the launcher's extra environment, which its workers inherit
  options.out = options.err = Redirect::AppendTo(out + ".log");
  auto launcher = Subprocess::Start(options);
  if (!launcher.ok()) {
    ADD_FAILURE() << "cannot start ringmaster-run: " << launcher.status();
    return 128;
  }
  const ExitStatus exit = launcher->Wait();
  std::fputs(ReadAll(out + ".log").c_str(), stderr);
  return exit.exited() ? exit.code : 128;
}

std::vector<double> ReadWeights(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> w;
  double v;
  while (in >> v) w.push_back(v);
  return w;
}

namespace {

struct ReferenceResult {
  std::string out;
  std::vector<double> weights;
};

// The one-process run for `worker_flags`, run on first use (a test thread's: GoogleTest assertions).
const ReferenceResult& ReferenceFor(const std::string& worker_flags) {
  static std::map<std::string, ReferenceResult> runs;
  auto it = runs.find(worker_flags);
  if (it != runs.end()) return it->second;
  ReferenceResult run;
  run.out = (Root() / ("reference" + (runs.empty() ? "" : "." + std::to_string(runs.size())))).string();
  EXPECT_EQ(Launch(run.out, "--np 1", worker_flags), 0) << "the one-process reference run failed";
  run.weights = ReadWeights(run.out + "/weights.txt");
  return runs.emplace(worker_flags, std::move(run)).first->second;
}

// OUT/samples.log: epoch -> its sample ids.
std::map<uint64_t, std::multiset<uint64_t>> SamplesByEpoch(const std::string& out) {
  std::ifstream in(out + "/samples.log");
  std::map<uint64_t, std::multiset<uint64_t>> by_epoch;
  uint64_t epoch, id;
  while (in >> epoch >> id) by_epoch[epoch].insert(id);
  return by_epoch;
}

}  // namespace

std::string ReferenceRun(const std::string& worker_flags) { return ReferenceFor(worker_flags).out; }

const std::vector<double>& Reference(const std::string& worker_flags) { return ReferenceFor(worker_flags).weights; }

// The last generation the launcher published (the chaos really happened when > 1).
int64_t LastGeneration(const std::string& out) {
  std::ifstream in(out + "/membership.json");
  std::stringstream text;
  text << in.rdbuf();
  auto doc = text.str();
  auto at = doc.find("\"generation\"");
  if (at == std::string::npos) return -1;
  return std::atoll(doc.c_str() + doc.find(':', at) + 1);
}

void ExpectMatchesReference(const std::string& out, int64_t min_generation, const std::string& reference_flags) {
  EXPECT_GE(LastGeneration(out), min_generation) << "the chaos did not change the membership";
  const auto& ref = Reference(reference_flags);
  ASSERT_EQ(ref.size(), 8u);
  auto got = ReadWeights(out + "/weights.txt");
  ASSERT_EQ(got.size(), ref.size()) << "no weights.txt from a finisher in " << out;
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - ref[i]), 1e-9 * std::abs(ref[i]))
        << "weight " << i << ": " << got[i] << " vs " << ref[i];
  }
  const auto by_epoch = SamplesByEpoch(out);
  if (reference_flags.empty()) {
    ASSERT_EQ(by_epoch.size(), static_cast<size_t>(kSteps * kBatch / kSamples));
    for (const auto& [e, ids] : by_epoch) {
      ASSERT_EQ(ids.size(), static_cast<size_t>(kSamples)) << "epoch " << e;
      uint64_t expect = 0;
      for (uint64_t s : ids) EXPECT_EQ(s, expect++) << "epoch " << e << ": a sample missing or repeated";
    }
    return;
  }
  // Other flags may change the steps or the data: the reference's samples are the truth (a one-process run
  // takes each id once per epoch), and each must be there once.
  const auto want = SamplesByEpoch(ReferenceRun(reference_flags));
  ASSERT_FALSE(want.empty()) << "the reference run committed no samples";
  ASSERT_EQ(by_epoch.size(), want.size()) << "epochs with committed samples";
  for (const auto& [e, ids] : want) {
    auto got = by_epoch.find(e);
    ASSERT_NE(got, by_epoch.end()) << "epoch " << e << " has no samples";
    EXPECT_EQ(got->second, ids) << "epoch " << e << ": a sample missing, repeated, or one the reference never took";
  }
}

// How many lines of OUT.log contain `text`.
int CountInLog(const std::string& out, const std::string& text) {
  std::ifstream log(out + ".log");
  int n = 0;
  for (std::string line; std::getline(log, line);) n += line.find(text) != std::string::npos;
  return n;
}

}  // namespace ringmaster::runtime_testing
