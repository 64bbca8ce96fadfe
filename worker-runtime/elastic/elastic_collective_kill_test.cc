// Kills inside collectives (label gpu-emulated, RINGMASTER_EMULATED_GPUS=4, and gpu on real GPUs): four
// ringmaster-train-example ranks with --backend nccl under ringmaster-run, and at least 20 of them SIGKILLed
// while inside their gradient's allreduce (ringmaster-run's killcolls: the rank is frozen until its phase file
// says it is in the collective, then killed; a replacement joins at once, so four ranks stay four). A peer dying
// there leaves the survivors' allreduce half done; the commit agreement (worker-runtime/README.md, "Commit
// agreement") must never let such a step count. With --integer-grads every sum is exact in any order, so:
//   - every rank that saw step S agreed logged the same CRC32C of the agreed state (commits.<worker>.log), and it
//     is the CRC the one-process run logged at S: nothing half-reduced was ever agreed, anywhere;
//   - no step is missing between the first and the last, and the last is the run's last step on every finisher;
//   - the final weights equal the one-process run's bit for bit, and every sample was taken once per epoch.
// RINGMASTER_KILLS=N asks for N kills instead of 20 (make soak-collective-kills: 200); fewer caught fails. A few
// more killcoll events than that are fired (Spare): one finds no collective to kill in when its worker spends its
// 10 s in a rebuild that stalls (an ncclCommShrink of a generation already superseded runs to its timeout, and the
// others' NCCL init times out waiting for it), which is the runtime's liveness, not what this test checks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "worker-runtime/testing/chaos_harness.h"
#include "worker-runtime/testing/gpu_test_env.h"

namespace {

using namespace ringmaster::runtime_testing;

constexpr int kDefaultKills = 20;
constexpr int kFirstKillStep = 3, kKillEvery = 2;  // killcolls@3:N: one every 2 steps (chaos_spec.h)

// The killcoll events beyond the kills wanted.
int Spare(int kills) { return std::max(2, kills / 10); }

int KillsWanted() {
  const char* n = ::getenv("RINGMASTER_KILLS");
  return n != nullptr && std::atoi(n) > 0 ? std::atoi(n) : kDefaultKills;
}

// Steps enough for every kill to fire with room after the last (its rollback), in whole epochs
// (kSamples / kBatch steps each) so that every epoch's samples can be checked.
int64_t StepsFor(int kills) {
  const int64_t per_epoch = kSamples / kBatch;
  const int64_t least = kFirstKillStep + kKillEvery * kills + 12;
  return (least + per_epoch - 1) / per_epoch * per_epoch;
}

// step -> worker -> the CRC32C it logged for that step's agreed state, from every OUT/commits.<worker>.log.
using Commits = std::map<int64_t, std::map<std::string, uint32_t>>;

// Reads them; a worker that logged a step twice, or out of order, is a failure.
Commits ReadCommits(const std::string& out) {
  Commits commits;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("commits.", 0) != 0) continue;
    const std::string worker = name.substr(8, name.size() - 8 - 4);  // commits.<worker>.log
    std::ifstream in(e.path());
    int64_t step = 0, last = 0;
    uint32_t crc = 0;
    while (in >> step >> crc) {
      EXPECT_GT(step, last) << worker << " logged step " << step << " after step " << last;
      last = step;
      commits[step][worker] = crc;
    }
  }
  return commits;
}

TEST(ElasticCollectiveKillTest, KillsInsideCollectivesNeverCommitAHalfReducedStep) {
  const std::string why = WhyNoGpuSuite();
  ASSERT_TRUE(why.empty()) << why;
  const bool emulated = EmulatedGpus();
  const int kills = KillsWanted();
  const int events = kills + Spare(kills);
  const int64_t steps = StepsFor(events);
  // What changes the result, shared with the one-process reference run.
  const std::string result_flags = "--integer-grads true --steps " + std::to_string(steps);
  std::string launcher_flags = "--np 4 --min 2 --max 4 --chaos killcolls@" + std::to_string(kFirstKillStep) + ":" +
                               std::to_string(events) + " --chaos-seed 5 --chaos-gap-ms 50 --deadline-s " +
                               std::to_string(60 + 6 * events);
  if (!emulated) {
    // Real GPUs: every rank on GPU 0 (each on a simulated node of its own), as many ranks as NCCL >= 2.30 lets
    // share a GPU; the emulation gives each rank its own emulated GPU.
    ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
    launcher_flags += " --workers-per-node 1";
  }
  const std::string out = (Root() / "collective-kills").string();
  const auto t0 = std::chrono::steady_clock::now();
  // A short rebuild timeout: a stalled rebuild (above) costs seconds, not tens of them.
  const int code = Launch(out, launcher_flags, "--backend nccl --step-delay-ms 20 --timeout-ms 4000 " + result_flags);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(code, 0) << "ringmaster-run failed (its log is above)";

  const int caught = CountInLog(out, "inside the collective of step");
  std::fprintf(stderr, "%d kills inside a collective (%d wanted, %d fired), %d steps, %.1f s\n", caught, kills, events,
               static_cast<int>(steps), seconds);
  ASSERT_GE(caught, kills) << "fewer workers were killed inside a collective than asked ("
                           << CountInLog(out, "skipped: ") << " 'killcoll ... skipped' lines say why)";

  // Weights within 1e-9 and every sample once per epoch against the one-process run; then bit for bit.
  ExpectMatchesReference(out, 2 * kills, result_flags);
  const std::string reference = ReferenceRun(result_flags);
  std::ifstream got(out + "/weights.txt"), want(reference + "/weights.txt");
  std::stringstream got_text, want_text;
  got_text << got.rdbuf();
  want_text << want.rdbuf();
  EXPECT_EQ(got_text.str(), want_text.str()) << "integer gradients: the weights must equal the reference's exactly";

  // Every agreed step: the same state on every rank that agreed it, and the one-process run's.
  const Commits commits = ReadCommits(out);
  const Commits expected = ReadCommits(reference);
  ASSERT_EQ(expected.size(), static_cast<size_t>(steps)) << "the reference run logged every step once";
  ASSERT_FALSE(commits.empty()) << "no commits.<worker>.log in " << out;
  EXPECT_EQ(commits.begin()->first, 1) << "the first agreed step";
  EXPECT_EQ(commits.rbegin()->first, steps) << "the last agreed step";
  EXPECT_EQ(commits.size(), static_cast<size_t>(commits.rbegin()->first - commits.begin()->first + 1))
      << "a step between the first and the last was agreed by no rank";
  int mismatches = 0;
  for (const auto& [step, by_worker] : commits) {
    const uint32_t truth = expected.count(step) ? expected.at(step).begin()->second : 0;
    for (const auto& [worker, crc] : by_worker) {
      if (crc == truth) continue;
      if (++mismatches <= 10) {
        ADD_FAILURE() << "step " << step << ": " << worker << " agreed a state with CRC " << crc
                      << ", the one-process run's is " << truth << " (" << by_worker.size() << " ranks agreed it)";
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "agreed states that differ from the one-process run's";
  // Every finisher (it wrote weights.<worker>.txt) saw the last step agreed.
  int finishers = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("weights.w", 0) != 0) continue;
    const std::string worker = name.substr(8, name.size() - 8 - 4);  // weights.<worker>.txt
    ++finishers;
    EXPECT_TRUE(commits.rbegin()->second.count(worker)) << worker << " finished without logging the last step";
  }
  EXPECT_EQ(finishers, 4) << "four ranks stay four";
  if (!HasFailure()) std::filesystem::remove_all(Root());
}

}  // namespace
