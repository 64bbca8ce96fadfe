// End to end: ringmaster-run starts real ringmaster-train-example processes on
// loopback and injects chaos; each run must finish with the weights of a
// one-process run (float64: within 1e-9 relative) and every sample id exactly
// once per epoch in samples.log. The launcher's and workers' progress lines
// go to the test log.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/testing/chaos_harness.h"

namespace {

using namespace ringmaster::runtime_testing;

class ElasticChaosTest : public ::testing::Test {
 protected:
  std::string Out() { return (Root() / ::testing::UnitTest::GetInstance()->current_test_info()->name()).string(); }
  // A short pause before each all-reduce keeps the workers inside a step when the chaos lands.
  static constexpr const char* kPaced = "--step-delay-ms 30";
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(Root());  // kept for a person to read when it failed
  }
};

TEST_F(ElasticChaosTest, NoChaosFourWorkersMatchOne) {
  ASSERT_EQ(Launch(Out(), "--np 4"), 0);
  ExpectMatchesReference(Out());
}

// The runtime configuration a worker is given through its environment is honoured: with
// RINGMASTER_TIMELINE set, every worker writes a Chrome trace of its collectives, across the
// rebuild that a killed worker causes, and training still matches the reference.
TEST_F(ElasticChaosTest, TimelineFromTheEnvironmentIsWrittenByEveryWorker) {
  const std::string pattern = Out() + "/timeline.{rank}.json";
  ASSERT_EQ(Launch(Out(), "--np 3 --min 2 --chaos kill@5:2", kPaced,
                   std::string(ringmaster::api::env::kTimeline) + "='" + pattern + "'"),
            0);
  ExpectMatchesReference(Out(), 2);
  for (int rank : {0, 1}) {
    const std::string path = Out() + "/timeline." + std::to_string(rank) + ".json";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path << " was not written";
    nlohmann::json events = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(events.is_array()) << path << " is not a JSON array";
    int gradient_runs = 0;
    for (const auto& e : events)
      gradient_runs += e.value("name", "") == "RUN" && e["args"].value("tensor", "") == "grad";
    EXPECT_GE(gradient_runs, kSteps) << path;  // every step's gradient allreduce, in every generation
  }
}

TEST_F(ElasticChaosTest, Float32WorkersMatchOneWithinFloat32Rounding) {
  std::string one = Out() + "/one";
  ASSERT_EQ(Launch(one, "--np 1", "--dtype float32"), 0);
  ASSERT_EQ(Launch(Out(), "--np 3 --min 2 --chaos kill@5:1", std::string(kPaced) + " --dtype float32"), 0);
  auto a = ReadWeights(one + "/weights.txt"), b = ReadWeights(Out() + "/weights.txt");
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(std::abs(a[i] - b[i]), 1e-5 * std::abs(a[i])) << i;
}

TEST_F(ElasticChaosTest, WorkerKilledMidAllreduce) {
  ASSERT_EQ(Launch(Out(), "--np 4 --min 2 --chaos kill@5:2", kPaced), 0);
  ExpectMatchesReference(Out(), 2);
}

TEST_F(ElasticChaosTest, RankZeroKilled) {
  ASSERT_EQ(Launch(Out(), "--np 3 --min 2 --chaos kill@5:0", kPaced), 0);
  ExpectMatchesReference(Out(), 2);
}

TEST_F(ElasticChaosTest, StoppedWorkerIsDetectedAndRemoved) {
  ASSERT_EQ(Launch(Out(), "--np 3 --min 2 --chaos stop@5:1", kPaced), 0);
  ExpectMatchesReference(Out(), 2);
}

// A worker's heartbeat clock starts at its first heartbeat: before it, a script importing torch is starting,
// not frozen. Each worker here starts the trainer 3 s late, three times the heartbeat timeout; none is
// removed and the run is the reference's.
TEST_F(ElasticChaosTest, AWorkerSlowToSendItsFirstHeartbeatIsNotRemoved) {
  std::vector<std::string> command = {"sh", "-c", "sleep 3; exec \"$0\" \"$@\""};
  for (const std::string& word : TrainerCommand()) command.push_back(word);
  ASSERT_EQ(LaunchCommand(Out(), "--np 2 --heartbeat-timeout-ms 1000 --startup-timeout-s 600", command), 0);
  ExpectMatchesReference(Out());
  EXPECT_EQ(CountInLog(Out(), "unresponsive"), 0) << "a starting worker was removed";
}

// A worker that never sends a heartbeat (here w2, which sleeps instead of training) is removed and killed
// after --startup-timeout-s, saying so; the others train on without it.
TEST_F(ElasticChaosTest, AWorkerThatNeverBeatsIsRemovedAfterTheStartupTimeout) {
  std::vector<std::string> command = {
      "sh", "-c", "if [ \"$RINGMASTER_WORKER_ID\" = w2 ]; then exec sleep 60; fi; exec \"$0\" \"$@\""};
  for (const std::string& word : TrainerCommand()) command.push_back(word);
  ASSERT_EQ(LaunchCommand(Out(), "--np 3 --min 2 --startup-timeout-s 2", command), 0);
  ExpectMatchesReference(Out(), 2);
  EXPECT_EQ(CountInLog(Out(), "w2 sent no heartbeat within 2 s of its start; removing and killing it"), 1);
  EXPECT_EQ(CountInLog(Out(), "w2 killed by signal 9"), 1) << "the silent worker was not killed";
  EXPECT_EQ(CountInLog(Out(), "unresponsive"), 1) << "only w2 may be removed for silence";
}

TEST_F(ElasticChaosTest, PausedWorkerComesBackAndTheSameGenerationIsRebuilt) {
  // SIGSTOP for 2.5 s with a heartbeat timeout far longer: nobody is removed, the collectives time
  // out after 1 s, no new record comes, and the workers build generation 1 again (a second attempt).
  int rc = Launch(Out(), "--np 3 --heartbeat-timeout-ms 60000 --pause-ms 2500 --chaos pause@5:1",
                  "--step-delay-ms 30 --timeout-ms 1000");
  ASSERT_EQ(rc, 0);
  ExpectMatchesReference(Out());
  std::ifstream log(Out() + ".log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("building it again"), std::string::npos);
  EXPECT_EQ(text.str().find("unresponsive"), std::string::npos) << "the paused worker was removed";
}

// Rank 1 stopped inside a step (SIGSTOP for 4 s) under a 60 s collective timeout and a heartbeat timeout longer
// still: rank 0's hang watchdog (RINGMASTER_HANG_MIN_SECONDS 1) revokes generation 1 and reports the hang, and
// ringmaster-run publishes generation 2, reason Hung, with the same workers; the run goes on as soon as rank 1
// does, not after the timeout. The stopped worker does not judge its own pause a hang (one generation, one hang).
TEST_F(ElasticChaosTest, AHungGenerationIsRebuiltAsHungLongBeforeTheCollectiveTimeout) {
  const auto start = std::chrono::steady_clock::now();
  int rc = Launch(Out(), "--np 2 --heartbeat-timeout-ms 60000 --pause-ms 4000 --chaos pause@5:1",
                  "--step-delay-ms 30 --timeout-ms 60000", "RINGMASTER_HANG_MIN_SECONDS=1");
  ASSERT_EQ(rc, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(45)) << "waited out the 60 s timeout";
  ExpectMatchesReference(Out(), 2);
  EXPECT_EQ(CountInLog(Out(), "(Hung: w0 committed no step for"), 1);
  EXPECT_EQ(CountInLog(Out(), "[w0] generation 1: no step committed for"), 1);
  EXPECT_EQ(CountInLog(Out(), "[w1] generation 1: no step committed for"), 0) << "w1 judged its own pause a hang";
  EXPECT_EQ(CountInLog(Out(), "generations rebuilt for a hang: 1"), 1);
  EXPECT_EQ(LastGeneration(Out()), 2);
  EXPECT_EQ(CountInLog(Out(), "unresponsive"), 0) << "the paused worker was removed";
}

TEST_F(ElasticChaosTest, RandomChaosSeeded) {
  ASSERT_EQ(Launch(Out(), "--np 3 --min 2 --max 5 --chaos random@4:4 --chaos-seed 11", kPaced), 0);
  ExpectMatchesReference(Out(), 2);
}

TEST_F(ElasticChaosTest, ScaleUp) {
  ASSERT_EQ(Launch(Out(), "--np 2 --max 5 --chaos add@5:3", kPaced), 0);
  ExpectMatchesReference(Out(), 2);
}

TEST_F(ElasticChaosTest, TwoChangesBackToBack) {
  ASSERT_EQ(Launch(Out(), "--np 3 --min 2 --chaos killadd@5:1", kPaced), 0);
  ExpectMatchesReference(Out(), 3);
}

TEST_F(ElasticChaosTest, RemovalBelowMinThenAdd) {
  ASSERT_EQ(Launch(Out(), "--np 2 --min 2 --chaos-gap-ms 600 --chaos kill@5:1,add@5:1", kPaced), 0);
  ExpectMatchesReference(Out(), 3);
}

TEST_F(ElasticChaosTest, HierarchicalProcessSetsAreResplitEveryGeneration) {
  // Two workers per simulated node; the gradient is summed per node, across node leaders and
  // back, through process sets the driver re-splits by node after every change.
  ASSERT_EQ(Launch(Out(), "--np 4 --min 2 --max 6 --workers-per-node 2 --chaos kill@5:1,add@10:2,kill@15:0",
                   std::string(kPaced) + " --hierarchical true"),
            0);
  ExpectMatchesReference(Out(), 4);
  std::ifstream log(Out() + ".log");
  std::set<std::string> layouts;  // distinct set layouts seen by the workers
  for (std::string line; std::getline(log, line);) {
    auto at = line.find("process sets of generation ");
    if (at != std::string::npos) layouts.insert(line.substr(line.find(':', at)));
  }
  EXPECT_GE(layouts.size(), 3u) << "the process sets did not follow the membership";
}

// The launcher's killsave waits until a save is in progress (a .tmp-step-* directory exists in the
// checkpoint directory) and SIGKILLs the saver, rank 0, then.
TEST_F(ElasticChaosTest, KillDuringCheckpointWrite) {
  std::string ckpt = Out() + "/ckpt";
  ASSERT_EQ(Launch(Out(), "--np 3 --min 1 --checkpoint-dir " + ckpt + " --chaos killsave@5:0,killsave@12:0",
                   std::string(kPaced) + " --checkpoint-every 1"),
            0);
  ExpectMatchesReference(Out(), 3);
  EXPECT_EQ(CountInLog(Out(), "was being written"), 2) << "a kill did not land during a save";
  auto store = ringmaster::checkpoint::CheckpointStore::Open({ckpt, 3, std::chrono::seconds(600), {}});
  ASSERT_OK(store);
  auto latest = (*store)->LoadLatest();
  ASSERT_OK(latest) << latest.status();
  EXPECT_EQ(latest->manifest.step, kSteps);
}

// Every worker dies during a save: the new workers load the newest complete checkpoint, skipping the
// half-written one, and finish with the weights of an uninterrupted run.
TEST_F(ElasticChaosTest, WholeJobKilledDuringCheckpointWriteRestartsFromTheLastCompleteOne) {
  std::string ckpt = Out() + "/ckpt";
  EXPECT_NE(Launch(Out() + "/first", "--np 1 --checkpoint-dir " + ckpt + " --chaos killsave@8:0",
                   std::string(kPaced) + " --checkpoint-every 1"),
            0)
      << "the only worker was killed: the first run cannot finish";
  ASSERT_EQ(CountInLog(Out() + "/first", "was being written"), 1);
  bool half_written = false;
  for (const auto& e : std::filesystem::directory_iterator(ckpt)) {
    half_written |= e.path().filename().string().rfind(".tmp-step-", 0) == 0;
  }
  ASSERT_TRUE(half_written) << "the kill left no half-written save behind";
  ASSERT_EQ(Launch(Out(), "--np 3 --checkpoint-dir " + ckpt, std::string(kPaced) + " --checkpoint-every 1"), 0);
  EXPECT_EQ(CountInLog(Out(), "loaded checkpoint step "), 3) << "every new worker starts from the checkpoint";
  auto got = ReadWeights(Out() + "/weights.txt");
  const auto& ref = Reference();
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_LE(std::abs(got[i] - ref[i]), 1e-9 * std::abs(ref[i])) << i;
}

TEST_F(ElasticChaosTest, RestartFromCheckpointWhenEveryWorkerIsNew) {
  // A first run stops at step 12; a second run with new workers resumes from the checkpoint
  // (their state is the checkpoint's) and ends where an uninterrupted run ends.
  std::string ckpt = Out() + "/ckpt";
  std::string first = Out() + "/first";
  // A later flag wins: this run stops at step 12.
  ASSERT_EQ(Launch(first, "--np 2", "--steps 12 --checkpoint-every 4 --checkpoint-dir " + ckpt), 0);
  ASSERT_EQ(Launch(Out(), "--np 3", "--checkpoint-every 4 --checkpoint-dir " + ckpt), 0);
  auto got = ReadWeights(Out() + "/weights.txt");
  const auto& ref = Reference();
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_LE(std::abs(got[i] - ref[i]), 1e-9 * std::abs(ref[i]));
}

}  // namespace
