// Orderly membership changes (boundary_switch.h) over the real Gloo backend on loopback: every member
// finishes its steps up to one boundary and switches there, so no step is rolled back, and a worker that
// leaves alive (Disrupted, ScaledDown) leaves with the step its peers resume from. A suspended job (the
// operator's empty generation, reason Suspended) stops at one boundary too, rank 0 saves that step as the
// final checkpoint, and the job admitted again resumes from it.
#include "worker-runtime/elastic/boundary_switch.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "api/job_status.h"
#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/testing/scripted_source.h"

namespace ringmaster::elastic {
namespace {

using testing::FreePort;
using testing::ScriptedSource;

using namespace std::chrono_literals;

TEST(OrderlyChangeTest, OnlyTheNextGenerationOfAChangeThatKillsNobody) {
  api::Membership running;
  running.generation = 4;
  EXPECT_EQ(api::reason::kSuspended, "Suspended");  // the operator's empty generation of a suspended job
  for (const char* reason : {"WorkerJoined", "ScaledUp", "ScaledDown", "Disrupted", "Suspended"}) {
    api::Membership next;
    next.generation = 5;
    next.reason = reason;
    EXPECT_TRUE(OrderlyChange(running, next)) << reason;
    next.generation = 6;  // a record in between was missed: it may have been a failure
    EXPECT_FALSE(OrderlyChange(running, next)) << reason;
  }
  for (const char* reason : {"WorkerFailed", "WorkerRemoved", "NodeLost", "PeerUnreachable", "chaos: w1 killed", ""}) {
    api::Membership next;
    next.generation = 5;
    next.reason = reason;
    EXPECT_FALSE(OrderlyChange(running, next)) << reason;
  }
}

api::Membership Record(int64_t gen, const std::string& reason,
                       const std::vector<std::pair<std::string, int>>& members) {
  api::Membership m;
  m.generation = gen;
  m.reason = reason;
  m.coordinator = "127.0.0.1:" + std::to_string(members[0].second);
  for (size_t r = 0; r < members.size(); ++r)
    m.members.push_back({members[r].first, "uid-" + members[r].first, static_cast<int32_t>(r), "127.0.0.1", "node"});
  return m;
}

// A worker's log lines. Thread-safe.
struct Lines {
  LogSink Sink() {
    return [this](LogLevel level, std::string_view line) {
      std::lock_guard lock(mu);
      lines.emplace_back(level, std::string(line));
    };
  }
  // The lines that contain `text` (of `level` only, when given).
  std::vector<std::string> With(std::string_view text, std::optional<LogLevel> level = std::nullopt) {
    std::lock_guard lock(mu);
    std::vector<std::string> found;
    for (const auto& [l, line] : lines)
      if ((!level || l == *level) && line.find(text) != std::string::npos) found.push_back(line);
    return found;
  }
  std::string All() {
    std::lock_guard lock(mu);
    std::string all;
    for (const auto& l : lines) all += "  " + l.second + "\n";
    return all;
  }
  std::mutex mu;
  std::vector<std::pair<LogLevel, std::string>> lines;  // guarded by mu
};

// One worker: a model that is the sum of every step's allreduce, trained by ElasticDriver::Run.
struct Worker {
  Worker(std::string worker_id, int store_port, membership::MembershipSource* source,
         std::chrono::milliseconds step = 15ms, checkpoint::CheckpointStore* store = nullptr, int every = 0)
      : id(std::move(worker_id)),
        step_time(step),
        port(store_port),
        checkpoints(store),
        checkpoint_every(every),
        state([this] { return std::to_string(model); },
              [this](std::string_view b) {
                model = std::stoll(std::string(b));
                return Status::Ok();
              }),
        driver(Options(), source, &state) {}
  ElasticOptions Options() {
    ElasticOptions o;
    o.worker_id = id;
    o.secret = "s";
    o.store_port = static_cast<uint16_t>(port);
    o.rebuild_timeout = 10s;
    o.checkpoints = checkpoints;
    o.checkpoint_every = checkpoint_every;
    o.log = log.Sink();
    return o;
  }
  void Train(int64_t steps) {
    thread = std::thread([this, steps] {
      auto restored = [this](int64_t, int64_t step) {
        last_restore_step = step;
        if (first_restore.step >= 0) return;
        first_restore = {step, model, state.cursor()};
      };
      result = driver.Run(
          steps,
          [this](const StepContext& ctx) -> StatusOr<data::SampleCursor> {
            ++started;
            // The step's compute (long enough for a change to arrive inside it), then its allreduce: a change
            // that aborts the runtime meanwhile fails the allreduce and the step is rolled back.
            std::this_thread::sleep_for(step_time);
            const int64_t one = 1;
            int64_t sum = 0;
            RINGMASTER_RETURN_IF_ERROR(
                ctx.rt->Allreduce("step", &one, &sum, 1, common::DataType::kInt64, common::ReduceOp::kSum));
            model += sum;
            return data::SampleCursor{0, static_cast<uint64_t>(ctx.step + 1)};
          },
          restored);
    });
  }
  std::string id;
  std::chrono::milliseconds step_time;
  int port;
  checkpoint::CheckpointStore* checkpoints;
  int checkpoint_every;
  Lines log;
  int64_t model = 0;
  std::atomic<int64_t> started{0};  // steps begun in this process (committed or not)
  int64_t last_restore_step = -1;   // the step the last generation joined resumed from
  // What the first restore (the first generation joined) found: the step, the program's model and the cursor.
  struct Restore {
    int64_t step = -1, model = -1;
    data::SampleCursor cursor;
  } first_restore;
  ElasticState state;
  ElasticDriver driver;
  std::thread thread;
  StatusOr<ElasticResult> result = InternalError("not run");
};

void WaitForStep(ElasticDriver& d, ElasticState& s, int64_t step) {
  for (int i = 0; i < 2000 && (d.joined_generation() == 0 || s.committed_step() < step); ++i)
    std::this_thread::sleep_for(5ms);
}

// A disrupted worker leaves in the middle of training: the three finish their steps up to the agreed
// boundary, the leaver returns kLeft with exactly the step the two survivors resume from, and nothing is
// rolled back anywhere. The model (the count of allreduced ones) then says every step ran exactly once at
// the world size it was committed with.
TEST(BoundarySwitchTest, ADisruptedWorkerLeavesAtTheBoundaryAndNoStepIsRolledBack) {
  ScriptedSource source;
  const int p0 = FreePort(), p1 = FreePort(), p2 = FreePort();
  Worker w0("w0", p0, &source), w1("w1", p1, &source), w2("w2", p2, &source);
  source.Publish(Record(1, "JobStarted", {{"w0", p0}, {"w1", p1}, {"w2", p2}}));
  const int64_t kSteps = 40;
  w0.Train(kSteps);
  w1.Train(kSteps);
  w2.Train(kSteps);
  WaitForStep(w0.driver, w0.state, 8);
  source.Publish(Record(2, "Disrupted", {{"w0", p0}, {"w1", p1}}));
  w2.thread.join();
  ASSERT_OK(w2.result) << w2.result.status();
  EXPECT_EQ(*w2.result, ElasticResult::kLeft);
  w0.thread.join();
  w1.thread.join();
  ASSERT_OK(w0.result) << w0.result.status();
  ASSERT_OK(w1.result) << w1.result.status();
  EXPECT_EQ(*w0.result, ElasticResult::kFinished);

  const int64_t boundary = w2.state.committed_step();
  EXPECT_GT(boundary, 8);
  EXPECT_LT(boundary, kSteps);
  for (Worker* w : {&w0, &w1}) {
    const RebuildStats last = w->driver.last_rebuild();
    EXPECT_EQ(last.generation, 2) << w->id;
    EXPECT_EQ(last.steps_lost, 0) << w->id << " rolled back steps at an orderly change";
    // Steps 1..boundary at world 3, the rest at world 2: each step's allreduce counted once.
    EXPECT_EQ(w->model, 3 * boundary + 2 * (kSteps - boundary)) << w->id;
  }
  EXPECT_EQ(w2.model, 3 * boundary);
  source.Stop();
}

// Two orderly changes before the boundary (a scale-down, then a disruption): everyone switches at the one
// boundary to the newer generation; both leavers leave there, nothing is rolled back.
TEST(BoundarySwitchTest, ASecondOrderlyChangeBeforeTheBoundaryIsTakenAtTheSameBoundary) {
  ScriptedSource source;
  const int p0 = FreePort(), p1 = FreePort(), p2 = FreePort();
  Worker w0("w0", p0, &source, 60ms), w1("w1", p1, &source, 60ms), w2("w2", p2, &source, 60ms);
  source.Publish(Record(1, "JobStarted", {{"w0", p0}, {"w1", p1}, {"w2", p2}}));
  const int64_t kSteps = 20;
  w0.Train(kSteps);
  w1.Train(kSteps);
  w2.Train(kSteps);
  WaitForStep(w0.driver, w0.state, 4);
  source.Publish(Record(2, "ScaledDown", {{"w0", p0}, {"w1", p1}}));
  // Every member has seen generation 2 (and waits for its boundary, a step or two away) before the next comes.
  for (int i = 0; i < 2000 && !(w0.driver.Superseded() && w1.driver.Superseded() && w2.driver.Superseded()); ++i)
    std::this_thread::sleep_for(1ms);
  source.Publish(Record(3, "Disrupted", {{"w0", p0}}));
  for (Worker* w : {&w0, &w1, &w2}) w->thread.join();
  ASSERT_OK(w0.result) << w0.result.status();
  ASSERT_OK(w1.result) << w1.result.status();
  ASSERT_OK(w2.result) << w2.result.status();
  EXPECT_EQ(*w0.result, ElasticResult::kFinished);
  EXPECT_EQ(*w1.result, ElasticResult::kLeft);
  EXPECT_EQ(*w2.result, ElasticResult::kLeft);
  const int64_t boundary = w2.state.committed_step();
  EXPECT_EQ(w1.state.committed_step(), boundary) << "the two leavers left at different boundaries";
  EXPECT_EQ(w0.driver.last_rebuild().generation, 3);
  EXPECT_EQ(w0.driver.last_rebuild().steps_lost, 0);
  EXPECT_EQ(w0.model, 3 * boundary + (kSteps - boundary));
  source.Stop();
}

// A failure-like change (WorkerFailed) does not wait: the step in flight is aborted at once and the
// survivors go on; the count still says every committed step ran once.
TEST(BoundarySwitchTest, AFailureDoesNotWaitForTheBoundary) {
  ScriptedSource source;
  const int p0 = FreePort(), p1 = FreePort();
  Worker w0("w0", p0, &source), w1("w1", p1, &source);
  source.Publish(Record(1, "JobStarted", {{"w0", p0}, {"w1", p1}}));
  const int64_t kSteps = 30;
  w0.Train(kSteps);
  w1.Train(kSteps);
  WaitForStep(w0.driver, w0.state, 5);
  source.Publish(Record(2, "WorkerFailed", {{"w0", p0}}));
  w0.thread.join();
  w1.thread.join();
  ASSERT_OK(w0.result) << w0.result.status();
  EXPECT_EQ(*w0.result, ElasticResult::kFinished);
  ASSERT_OK(w1.result) << w1.result.status();
  EXPECT_EQ(*w1.result, ElasticResult::kLeft);
  // The survivor resumes from the last step both confirmed (commit agreement): at most what the leaver computed.
  const int64_t at = w0.last_restore_step;
  EXPECT_GE(at, 4);
  EXPECT_LE(at, w1.state.committed_step());
  EXPECT_EQ(w0.driver.last_rebuild().generation, 2);
  EXPECT_EQ(w0.model, 2 * at + (kSteps - at));
  source.Stop();
}

// The operator's record of a suspended job (operator/controller/job_plan.cc, PlanSuspension): no members.
api::Membership SuspendedRecord(int64_t gen) {
  api::Membership m;
  m.generation = gen;
  m.reason = "Suspended";
  m.message = "generation " + std::to_string(gen) + ", world size 0 (the job is suspended)";
  return m;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<std::pair<std::string, int>> Members(const std::vector<std::unique_ptr<Worker>>& workers) {
  std::vector<std::pair<std::string, int>> members;
  for (const auto& w : workers) members.push_back({w->id, w->port});
  return members;
}

checkpoint::CheckpointOptions StoreOptions(const std::string& dir) {
  checkpoint::CheckpointOptions o;
  o.dir = dir;
  return o;
}

struct SuspendCase {
  int workers;
  int checkpoint_every;  // 0: no periodic checkpoints, the final one is the only one
};

void PrintTo(const SuspendCase& c, std::ostream* os) {
  *os << c.workers << " workers, checkpoint_every " << c.checkpoint_every;
}

class SuspendTest : public ::testing::TestWithParam<SuspendCase> {};

// A job suspended mid-training (its user's spec.runPolicy.suspend, or the queue evicting it): every member
// commits its steps up to one boundary and leaves (kLeft, no step begun past it and rolled back), rank 0
// saves that very step as a checkpoint before it leaves, and the job admitted again (fresh workers, the
// same checkpoint directory, generation N + 2) resumes there with the identical bytes and cursor: over both
// runs every step is computed exactly once. (Once, a suspension aborted the step in flight and the job
// resumed from the last periodic checkpoint.)
TEST_P(SuspendTest, EveryMemberStopsAtOneBoundaryAndTheResumedJobStartsThere) {
  const int n = GetParam().workers;
  const int every = GetParam().checkpoint_every;
  const std::string dir = FreshDir("suspend-" + std::to_string(n) + "-" + std::to_string(every));
  auto store = checkpoint::CheckpointStore::Open(StoreOptions(dir));
  ASSERT_OK(store) << store.status();
  const int64_t kSteps = 40;
  int64_t boundary = 0;
  {
    ScriptedSource source;
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < n; ++i)
      workers.push_back(
          std::make_unique<Worker>("w" + std::to_string(i), FreePort(), &source, 15ms, store->get(), every));
    source.Publish(Record(1, "JobStarted", Members(workers)));
    for (auto& w : workers) w->Train(kSteps);
    WaitForStep(workers[0]->driver, workers[0]->state, 6);
    source.Publish(SuspendedRecord(2));
    for (auto& w : workers) w->thread.join();
    boundary = workers[0]->state.committed_step();
    EXPECT_GT(boundary, 6);
    EXPECT_LT(boundary, kSteps);
    for (auto& w : workers) {
      ASSERT_OK(w->result) << w->id << ": " << w->result.status();
      EXPECT_EQ(*w->result, ElasticResult::kLeft) << w->id;
      EXPECT_EQ(w->state.committed_step(), boundary) << w->id << " left at another step";
      EXPECT_EQ(w->started.load(), boundary) << w->id << " began a step past the boundary (aborted, not orderly)";
      EXPECT_EQ(w->model, n * boundary) << w->id;
      const auto saved = w->log.With("final checkpoint saved");
      if (w->id == "w0") {
        ASSERT_EQ(saved.size(), 1u) << w->log.All();
        EXPECT_EQ(saved[0].rfind("suspended at step " + std::to_string(boundary) + ": final checkpoint saved (", 0), 0u)
            << saved[0];
        EXPECT_EQ(saved[0].find("the periodic checkpoint of that step") != std::string::npos, every == 1)
            << saved[0] << ": the periodic save of the boundary step was already queued, and is not saved twice";
      } else {
        EXPECT_TRUE(saved.empty()) << w->id << " is not rank 0: " << saved[0];
      }
      EXPECT_TRUE(w->log.With("", LogLevel::kWarning).empty()) << w->id << ":\n" << w->log.All();
    }
    source.Stop();
  }

  // Rank 0's checkpoint of exactly the boundary is the newest on disk.
  auto steps = (*store)->ListSteps();
  ASSERT_OK(steps) << steps.status();
  ASSERT_FALSE(steps->empty()) << "no checkpoint was saved";
  EXPECT_EQ(steps->front(), boundary);
  auto loaded = (*store)->Load(boundary);
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->manifest.world_size, static_cast<uint32_t>(n));

  // Admitted again: new pods (fresh processes: fresh drivers and state, new ports) at generation 3.
  auto reopened = checkpoint::CheckpointStore::Open(StoreOptions(dir));
  ASSERT_OK(reopened) << reopened.status();
  ScriptedSource source;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < n; ++i)
    workers.push_back(
        std::make_unique<Worker>("w" + std::to_string(i), FreePort(), &source, 5ms, reopened->get(), every));
  source.Publish(Record(3, "JobStarted", Members(workers)));
  for (auto& w : workers) w->Train(kSteps);
  for (auto& w : workers) w->thread.join();
  for (auto& w : workers) {
    ASSERT_OK(w->result) << w->id << ": " << w->result.status();
    EXPECT_EQ(*w->result, ElasticResult::kFinished) << w->id;
    EXPECT_EQ(w->first_restore.step, boundary) << w->id;
    EXPECT_EQ(w->first_restore.model, n * boundary) << w->id << ": not the state committed at the boundary";
    EXPECT_EQ(w->first_restore.cursor, (data::SampleCursor{0, static_cast<uint64_t>(boundary)})) << w->id;
    EXPECT_EQ(w->started.load(), kSteps - boundary) << w->id << ": a step computed twice, or one lost";
    EXPECT_EQ(w->model, n * kSteps) << w->id;
  }
  EXPECT_EQ(workers[0]->log.With("loaded checkpoint step " + std::to_string(boundary) + " ").size(), 1u)
      << workers[0]->log.All();
  source.Stop();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Suspension, SuspendTest,
                         ::testing::Values(SuspendCase{2, 0}, SuspendCase{3, 0}, SuspendCase{2, 1}),
                         [](const auto& info) {
                           return std::to_string(info.param.workers) + "Workers" +
                                  (info.param.checkpoint_every == 1 ? "CheckpointingEveryStep" : "FinalCheckpointOnly");
                         });

// Without a checkpoint store a suspension still stops every member at the boundary and leaves (kLeft: the
// process exits 0); rank 0 says, once, that the job will restart from its initial state and what to set.
TEST(SuspensionTest, WithoutACheckpointStoreEveryMemberLeavesAndRankZeroWarnsOnce) {
  ScriptedSource source;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 2; ++i) workers.push_back(std::make_unique<Worker>("w" + std::to_string(i), FreePort(), &source));
  source.Publish(Record(1, "JobStarted", Members(workers)));
  for (auto& w : workers) w->Train(40);
  WaitForStep(workers[0]->driver, workers[0]->state, 5);
  source.Publish(SuspendedRecord(2));
  for (auto& w : workers) w->thread.join();
  const int64_t boundary = workers[0]->state.committed_step();
  for (auto& w : workers) {
    ASSERT_OK(w->result) << w->id << ": " << w->result.status();
    EXPECT_EQ(*w->result, ElasticResult::kLeft) << w->id;
    EXPECT_EQ(w->state.committed_step(), boundary) << w->id;
    EXPECT_EQ(w->started.load(), boundary) << w->id;
  }
  const auto warnings = workers[0]->log.With("", LogLevel::kWarning);
  ASSERT_EQ(warnings.size(), 1u) << workers[0]->log.All();
  EXPECT_EQ(warnings[0].rfind("suspended at step " + std::to_string(boundary) + ": no checkpoint store", 0), 0u)
      << warnings[0];
  EXPECT_NE(warnings[0].find("restart from its initial state"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("RINGMASTER_CHECKPOINT_DIR"), std::string::npos) << warnings[0];
  EXPECT_TRUE(workers[1]->log.With("", LogLevel::kWarning).empty()) << workers[1]->log.All();
  source.Stop();
}

// A final save that fails (the checkpoint directory became a regular file) is a warning: rank 0 still
// leaves at the boundary with OK, like the others.
TEST(SuspensionTest, AFailedFinalSaveIsAWarningAndTheWorkerStillLeaves) {
  const std::string dir = FreshDir("suspend-failing");
  auto store = checkpoint::CheckpointStore::Open(StoreOptions(dir));
  ASSERT_OK(store) << store.status();
  ScriptedSource source;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 2; ++i)
    workers.push_back(std::make_unique<Worker>("w" + std::to_string(i), FreePort(), &source, 15ms, store->get()));
  source.Publish(Record(1, "JobStarted", Members(workers)));
  for (auto& w : workers) w->Train(40);
  WaitForStep(workers[0]->driver, workers[0]->state, 5);
  std::filesystem::remove_all(dir);
  std::ofstream(dir) << "not a directory";
  source.Publish(SuspendedRecord(2));
  for (auto& w : workers) w->thread.join();
  for (auto& w : workers) {
    ASSERT_OK(w->result) << w->id << ": " << w->result.status();
    EXPECT_EQ(*w->result, ElasticResult::kLeft) << w->id;
  }
  const auto failed = workers[0]->log.With("the final checkpoint failed", LogLevel::kWarning);
  ASSERT_EQ(failed.size(), 1u) << workers[0]->log.All();
  EXPECT_EQ(failed[0].rfind("suspended at step " + std::to_string(workers[0]->state.committed_step()), 0), 0u)
      << failed[0];
  source.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::elastic
