// Orderly membership changes (boundary_switch.h) over the real Gloo backend on loopback: every member
// finishes its steps up to one boundary and switches there, so no step is rolled back, and a worker that
// leaves alive (Disrupted, ScaledDown) leaves with the step its peers resume from.
#include "worker-runtime/elastic/boundary_switch.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/status_test_macros.h"
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
  for (const char* reason : {"WorkerJoined", "ScaledUp", "ScaledDown", "Disrupted"}) {
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

// One worker: a model that is the sum of every step's allreduce, trained by ElasticDriver::Run.
struct Worker {
  Worker(std::string worker_id, int store_port, membership::MembershipSource* source,
         std::chrono::milliseconds step = 15ms)
      : id(std::move(worker_id)),
        step_time(step),
        port(store_port),
        state([this] { return std::to_string(model); },
              [this](std::string_view b) {
                model = std::stoll(std::string(b));
                return Status::Ok();
              }),
        driver(Options(), source, &state) {}
  ElasticOptions Options() const {
    ElasticOptions o;
    o.worker_id = id;
    o.secret = "s";
    o.store_port = static_cast<uint16_t>(port);
    o.rebuild_timeout = 10s;
    return o;
  }
  void Train(int64_t steps) {
    thread = std::thread([this, steps] {
      result = driver.Run(steps, [this](const StepContext& ctx) -> StatusOr<data::SampleCursor> {
        // The step's compute (long enough for a change to arrive inside it), then its allreduce: a change that
        // aborts the runtime meanwhile fails the allreduce and the step is rolled back.
        std::this_thread::sleep_for(step_time);
        const int64_t one = 1;
        int64_t sum = 0;
        RINGMASTER_RETURN_IF_ERROR(
            ctx.rt->Allreduce("step", &one, &sum, 1, common::DataType::kInt64, common::ReduceOp::kSum));
        model += sum;
        return data::SampleCursor{0, static_cast<uint64_t>(ctx.step + 1)};
      });
    });
  }
  std::string id;
  std::chrono::milliseconds step_time;
  int port;
  int64_t model = 0;
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
  const int64_t at = w1.state.committed_step();
  EXPECT_EQ(w0.driver.last_rebuild().generation, 2);
  EXPECT_EQ(w0.model, 2 * at + (kSteps - at));
  source.Stop();
}

}  // namespace
}  // namespace ringmaster::elastic
