// The hang watchdog in the driver (hang_watchdog.h, ElasticDriver::CheckHang), over Gloo on loopback: a rank that
// stops inside a step leaves its peer in a collective that neither fails nor completes. The watchdog aborts the
// step long before the collective timeout, the hang is reported to the membership's owner (here a scripted one
// that publishes the next generation, reason Hung, as the operator and ringmaster-run do) and the same members
// rebuild and finish, every committed step counted once.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "api/job_status.h"
#include "base/status_test_macros.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/testing/scripted_source.h"

namespace ringmaster::elastic {
namespace {

using namespace std::chrono_literals;
using testing::FreePort;
using testing::ScriptedSource;

// Plays the operator: a hang report about the current generation publishes the next one, same members, reason Hung;
// a report about an older generation is stale. Thread-safe.
class HangOwner : public ScriptedSource {
 public:
  Status ReportHang(const api::HangReport& report) override {
    std::lock_guard lock(mu_);
    reports_.push_back(report);
    api::Membership latest = Latest();
    if (report.generation == latest.generation) {
      latest.generation += 1;
      latest.reason = std::string(api::reason::kHung);
      Publish(latest);
    }
    return Status::Ok();
  }
  std::vector<api::HangReport> reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }

 private:
  std::mutex mu_;
  std::vector<api::HangReport> reports_;
};

api::Membership Record(int64_t gen, const std::vector<std::pair<std::string, int>>& members) {
  api::Membership m;
  m.generation = gen;
  m.reason = "JobStarted";
  m.coordinator = "127.0.0.1:" + std::to_string(members[0].second);
  for (size_t r = 0; r < members.size(); ++r)
    m.members.push_back({members[r].first, "uid-" + members[r].first, static_cast<int32_t>(r), "127.0.0.1", "node"});
  return m;
}

// One Gloo worker whose model is the sum of every step's allreduce of 1. At step `stop` of its first generation it
// submits a collective its peer never does (and so never the one its peer waits in); 0: never. `hang_factor` 0
// turns its watchdog off.
struct Worker {
  Worker(std::string worker_id, int store_port, membership::MembershipSource* source, int64_t stop,
         double hang_factor = 10)
      : id(std::move(worker_id)),
        port(store_port),
        stop_at(stop),
        factor(hang_factor),
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
    o.rebuild_timeout = 60s;  // the collective timeout the watchdog must beat by far
    o.runtime.timeout = 60s;
    o.hang_factor = factor;
    o.hang_floor = 1s;
    o.metrics = &metrics;
    o.log = [this](LogLevel, std::string_view line) {
      std::lock_guard lock(mu);
      lines.emplace_back(line);
    };
    return o;
  }
  void Train(int64_t steps) {
    thread = std::thread([this, steps] {
      result = driver.Run(steps, [this](const StepContext& ctx) -> StatusOr<data::SampleCursor> {
        std::this_thread::sleep_for(10ms);
        const int64_t one = 1;
        int64_t sum = 0;
        if (ctx.step + 1 == stop_at && ctx.generation == 1) {
          stopped_at = std::chrono::steady_clock::now();
          stopped = true;
          // Stuck: a collective no peer submits. It returns only when this runtime is aborted.
          RINGMASTER_RETURN_IF_ERROR(
              ctx.rt->Allreduce("stuck", &one, &sum, 1, common::DataType::kInt64, common::ReduceOp::kSum));
          return InternalError("the stuck collective completed");
        }
        RINGMASTER_RETURN_IF_ERROR(
            ctx.rt->Allreduce("step", &one, &sum, 1, common::DataType::kInt64, common::ReduceOp::kSum));
        model += sum;
        return data::SampleCursor{0, static_cast<uint64_t>(ctx.step + 1)};
      });
      done = true;
    });
  }
  std::string Log() {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : lines) out += "  " + l + "\n";
    return out;
  }
  bool Logged(const std::string& text) {
    std::lock_guard lock(mu);
    for (const auto& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }

  std::string id;
  int port;
  int64_t stop_at;  // 0: never
  double factor;
  WorkerMetrics metrics{nullptr, {}};
  std::mutex mu;
  std::vector<std::string> lines;  // guarded by mu
  int64_t model = 0;
  ElasticState state;
  ElasticDriver driver;
  std::thread thread;
  std::atomic<bool> stopped{false}, done{false};
  std::chrono::steady_clock::time_point stopped_at;
  StatusOr<ElasticResult> result = InternalError("not run");
};

TEST(ElasticHangTest, AStuckStepIsAbortedWellBeforeTheCollectiveTimeoutAndTheGenerationRebuilt) {
  HangOwner owner;
  const int p0 = FreePort(), p1 = FreePort();
  constexpr int64_t kSteps = 20, kStopAt = 8;
  // w1 stops inside step 8 with its own watchdog off: only w0, left in a collective w1 never submits, can tell; the
  // owner's Hung generation then releases w1 too.
  Worker w0("w0", p0, &owner, 0), w1("w1", p1, &owner, kStopAt, /*hang_factor=*/0);
  owner.Publish(Record(1, {{"w0", p0}, {"w1", p1}}));
  w0.Train(kSteps);
  w1.Train(kSteps);
  // Both finish within 20 s (the collective timeout is 60 s); else a new generation releases them and the test fails.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!(w0.done && w1.done) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  const bool finished = w0.done && w1.done;
  if (!finished) {
    api::Membership release = owner.Latest();
    release.generation += 100;
    release.reason = "WorkerFailed";
    owner.Publish(release);
  }
  w0.thread.join();
  w1.thread.join();
  ASSERT_TRUE(finished) << "still stuck 20 s later\nw0:\n" << w0.Log() << "w1:\n" << w1.Log();
  ASSERT_TRUE(w1.stopped);
  ASSERT_OK(w0.result) << w0.result.status() << "\nw0:\n" << w0.Log();
  ASSERT_OK(w1.result) << w1.result.status() << "\nw1:\n" << w1.Log();
  EXPECT_EQ(*w0.result, ElasticResult::kFinished);
  EXPECT_EQ(*w1.result, ElasticResult::kFinished);

  // The owner heard of the hang of generation 1 from w0, after about the floor (1 s), and rebuilt it as generation 2.
  const std::vector<api::HangReport> reports = owner.reports();
  ASSERT_EQ(reports.size(), 1u) << "w0:\n" << w0.Log() << "w1:\n" << w1.Log();
  const api::HangReport& r = reports[0];
  EXPECT_EQ(r.reporter, "w0");
  EXPECT_EQ(r.generation, 1);
  EXPECT_GE(r.stalled_seconds, 1.0);
  EXPECT_LT(r.stalled_seconds, 10.0);
  EXPECT_GT(r.median_step_seconds, 0);
  EXPECT_LT(r.median_step_seconds, 0.5);
  EXPECT_EQ(r.step, kStopAt - 1) << "the last step committed before the stall";
  EXPECT_FALSE(r.reported_at.empty());
  EXPECT_EQ(owner.Latest().generation, 2);
  EXPECT_EQ(owner.Latest().reason, api::reason::kHung);
  EXPECT_EQ(w0.driver.last_rebuild().generation, 2);
  EXPECT_EQ(w1.driver.last_rebuild().generation, 2) << "the owner's generation released w1, stuck with no watchdog";

  // w0's watchdog revoked the stuck generation: the line, the counter; w1's was off.
  EXPECT_TRUE(w0.Logged("the generation is hung; revoking and rebuilding")) << w0.Log();
  EXPECT_NE(w0.metrics.Render().find("ringmaster_worker_hangs_total 1"), std::string::npos);
  EXPECT_NE(w1.metrics.Render().find("ringmaster_worker_hangs_total 0"), std::string::npos);
  // Well before the collective timeout: from w1's stop to the end of training.
  EXPECT_LT(std::chrono::steady_clock::now() - w1.stopped_at, 15s);
  // Every committed step counted once at a world of two: the stuck step was rolled back, not committed.
  EXPECT_EQ(w0.state.committed_step(), kSteps);
  EXPECT_EQ(w0.model, 2 * kSteps);
  EXPECT_EQ(w1.model, 2 * kSteps);
}

// A pause shorter than the floor is no hang, however many median steps it lasts.
TEST(ElasticHangTest, APauseBelowTheFloorIsNoHang) {
  HangOwner owner;
  const int p0 = FreePort();
  Worker w0("w0", p0, &owner, 0);
  owner.Publish(Record(1, {{"w0", p0}}));
  ASSERT_OK(w0.driver.Start());
  auto joined = w0.driver.Join();
  ASSERT_OK(joined) << joined.status();
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(5ms);
    ASSERT_OK(w0.driver.Commit(w0.driver.Context().cursor));
  }
  std::this_thread::sleep_for(600ms);  // ~100 median steps, below the 1 s floor
  ASSERT_OK(w0.driver.Commit(w0.driver.Context().cursor));
  w0.driver.Finish();
  EXPECT_TRUE(owner.reports().empty());
  EXPECT_FALSE(w0.Logged("hung")) << w0.Log();
  EXPECT_EQ(owner.Latest().generation, 1);
}

}  // namespace
}  // namespace ringmaster::elastic
