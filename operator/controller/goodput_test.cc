// Goodput accounting (goodput.h): a job through a kill, a replacement and its end, by phase; spares, suspension,
// recoveries across generations that never stepped; the live figure; the series; and PlanJob's status carrying it
// without churn.
#include "operator/controller/goodput.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "base/time_format.h"
#include "operator/controller/job_plan.h"
#include "operator/controller/job_state_metrics.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::time_point kT0 = Clock::from_time_t(1'800'000'000);
Clock::time_point At(double s) { return kT0 + milliseconds(static_cast<int64_t>(s * 1000)); }
std::string Time(double s) { return FormatRfc3339(At(s), TimePrecision::kMillis); }

// Generation `generation` of `pods` one-process workers "w-<i>" (uid "u-<i>"), published at `changed_at`.
api::Membership Generation(int64_t generation, std::vector<int> pods, const std::string& reason, double changed_at) {
  api::Membership m;
  m.generation = generation;
  int32_t rank = 0;
  for (int i : pods) m.members.push_back({"w-" + std::to_string(i), "u-" + std::to_string(i), rank++, "10.0.0.1", "n"});
  m.reason = reason;
  m.changed_at = Time(changed_at);
  return m;
}

api::ProgressReport Report(int64_t generation, int32_t world, double first_step_at, double rebuild, double restore,
                           int64_t replayed = 0, double step_seconds = 0.5) {
  api::ProgressReport r;
  r.generation = generation;
  r.reporter = "w-0";
  r.world_size = world;
  r.first_step = 10 * generation + 1;
  r.first_step_at = Time(first_step_at);
  r.resumed_from = 10 * generation;
  r.restored_from = std::string(api::restored_from::kPeer);
  r.replayed_steps = replayed;
  r.rebuild_seconds = rebuild;
  r.restore_seconds = restore;
  r.step_seconds = step_seconds;
  return r;
}

// A job of 4 desired workers that started at 0 s; each step below feeds the previous result back, as the
// status does.
class GoodputTest : public ::testing::Test {
 protected:
  // Accounts one reconcile: the status had `before` (the membership now, when null) and writes `now_membership`.
  api::Goodput Account(const api::Membership& now_membership, std::optional<api::Membership> before = std::nullopt,
                       std::vector<FailureTime> observed = {}) {
    GoodputInput in{goodput_,
                    before.value_or(now_membership),
                    now_membership,
                    desired_,
                    0,
                    failures_,
                    std::move(observed),
                    report_,
                    Time(0),
                    completion_,
                    At(1e6)};
    auto out = AccountGoodput(in);
    EXPECT_TRUE(out.has_value());
    // The same observations again change nothing: the status is not rewritten on every reconcile.
    in.previous = out;
    in.before = now_membership;
    in.observed_failures.clear();
    EXPECT_EQ(AccountGoodput(in), out) << "accounting the same observations twice";
    recovered_ = CompletedRecovery(goodput_, out);
    goodput_ = out;
    return *out;
  }

  std::optional<api::Goodput> goodput_;
  std::vector<api::FailureRecord> failures_;
  std::optional<api::ProgressReport> report_;
  std::string completion_;
  std::optional<double> recovered_;
  int32_t desired_ = 4;
};

TEST_F(GoodputTest, AKilledWorkerIsAccountedByPhaseAndTheRatioIsProductiveOverWall) {
  const api::Membership g1 = Generation(1, {0, 1, 2, 3}, "JobStarted", 10);
  api::Goodput g = Account(g1, api::Membership{});
  EXPECT_EQ(g.as_of, Time(0));
  EXPECT_EQ(g.wall_seconds, 0);
  EXPECT_EQ(g.accounted_generation, 0);

  // Its first step at 20 s: stepping from then; the job's start costs no rebuild.
  report_ = Report(1, 4, 20, 1.0, 0.5);
  g = Account(g1);
  EXPECT_EQ(g.accounted_generation, 1);
  EXPECT_EQ(g.as_of, Time(20));
  EXPECT_EQ(g.wall_seconds, 20);
  EXPECT_EQ(g.productive_seconds, 0);
  EXPECT_EQ(g.lost_seconds, api::LostSeconds{});

  // w-3's container dies at 100 s; the operator publishes generation 2 (3 workers) at 103 s.
  const api::Membership g2 = Generation(2, {0, 1, 2}, "WorkerFailed", 103);
  g = Account(g2, g1, {{"w-3", "u-3", At(100)}});
  EXPECT_EQ(g.productive_seconds, 80) << "stepping stops at the failure, not at the publication";
  EXPECT_EQ(g.wall_seconds, 100);
  EXPECT_EQ(g.as_of, Time(100));
  EXPECT_EQ(g.failures, 1);
  EXPECT_DOUBLE_EQ(g.lost_seconds.detect, 3);
  EXPECT_EQ(g.recovering_since, Time(100));
  EXPECT_FALSE(g.last_recovery_seconds.has_value());
  EXPECT_FALSE(recovered_);

  // Generation 2's first step at 106 s ends the recovery: 6 s.
  report_ = Report(2, 3, 106, 2.0, 0.5);
  g = Account(g2);
  EXPECT_EQ(g.last_recovery_seconds, 6);
  EXPECT_EQ(recovered_, 6);
  EXPECT_TRUE(g.recovering_since.empty());
  EXPECT_DOUBLE_EQ(g.lost_seconds.rebuild, 2);
  EXPECT_DOUBLE_EQ(g.lost_seconds.restore, 0.5);

  // The replacement joins at 146 s: 40 s at 3 of 4 were 30 productive and 10 lost to rescheduling.
  const api::Membership g3 = Generation(3, {0, 1, 2, 4}, "WorkerJoined", 146);
  g = Account(g3, g2);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 110);
  EXPECT_DOUBLE_EQ(g.lost_seconds.reschedule, 10);
  EXPECT_EQ(g.failures, 1);
  EXPECT_FALSE(recovered_);

  // Its first step: the join's rebuild and its replayed steps (2 x 0.5 s) count too.
  report_ = Report(3, 4, 150, 1.5, 0.25, 2, 0.5);
  g = Account(g3);
  EXPECT_DOUBLE_EQ(g.lost_seconds.rebuild, 3.5);
  EXPECT_DOUBLE_EQ(g.lost_seconds.restore, 0.75);
  EXPECT_DOUBLE_EQ(g.lost_seconds.replay, 1);
  EXPECT_EQ(g.last_recovery_seconds, 6) << "a join is no recovery";
  EXPECT_FALSE(recovered_);

  // Done at 250 s: 100 s more at the full world.
  completion_ = Time(250);
  g = Account(g3);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 210);
  EXPECT_DOUBLE_EQ(g.wall_seconds, 250);
  EXPECT_DOUBLE_EQ(g.ratio, 0.84);
  EXPECT_EQ(g.as_of, Time(250));
}

TEST_F(GoodputTest, AWarmSpareTakingTheLostPlaceLeavesNothingToReschedule) {
  const api::Membership g1 = Generation(1, {0, 1, 2, 3}, "JobStarted", 0);
  Account(g1, api::Membership{});
  report_ = Report(1, 4, 5, 1, 0);
  Account(g1);
  const api::Membership g2 = Generation(2, {0, 1, 2, 4}, "WorkerFailed", 51);  // the spare w-4 at once
  Account(g2, g1, {{"w-3", "u-3", At(50)}});
  report_ = Report(2, 4, 53, 1, 0.5);
  Account(g2);
  const api::Membership g3 = Generation(3, {0, 1, 2, 4, 5}, "ScaledUp", 100);
  api::Goodput g = Account(g3, g2);
  EXPECT_EQ(g.lost_seconds.reschedule, 0);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 45 + 47);
  EXPECT_EQ(g.last_recovery_seconds, 3);
  EXPECT_DOUBLE_EQ(g.lost_seconds.detect, 1);
}

// Scaled from 4 to 6 at 100 s, two joiners at 130 s: the time before the scale counts at 4 of 4, the wait at 4 of 6
// -- and the wait is no rescheduling, even after an earlier failure.
TEST_F(GoodputTest, AScaleIsAccountedWhenSeenAndItsWaitIsNoRescheduling) {
  const api::Membership g1 = Generation(1, {0, 1, 2, 3}, "JobStarted", 0);
  Account(g1, api::Membership{});
  report_ = Report(1, 4, 10, 1, 0);
  Account(g1);
  const api::Membership g2 = Generation(2, {0, 1, 2, 4}, "WorkerFailed", 21);  // a spare: full world
  Account(g2, g1, {{"w-3", "u-3", At(20)}});
  report_ = Report(2, 4, 25, 1, 0);
  Account(g2);
  GoodputInput in{goodput_, g2, g2, 6, 4, failures_, {}, report_, Time(0), "", At(100)};
  auto scaled = AccountGoodput(in);
  ASSERT_TRUE(scaled);
  EXPECT_DOUBLE_EQ(scaled->productive_seconds, 10 + 75);
  EXPECT_EQ(scaled->as_of, Time(100));
  goodput_ = scaled;
  desired_ = 6;
  api::Goodput g = Account(Generation(3, {0, 1, 2, 4, 5, 6}, "ScaledUp", 130), g2);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 85 + 30.0 * 4 / 6);
  EXPECT_EQ(g.lost_seconds.reschedule, 0);
}

TEST_F(GoodputTest, TheLossTimeComesFromRecentFailuresWhenThePodIsGoneAndIsThePublicationWhenUnknown) {
  const api::Membership g1 = Generation(1, {0, 1}, "JobStarted", 0);
  Account(g1, api::Membership{});
  report_ = Report(1, 2, 10, 1, 0);
  Account(g1);
  failures_ = {{"w-1", "u-1", 137, "Error", Time(30), 20}, {"w-1", "old-uid", 1, "Error", Time(5), 1}};
  const api::Membership g2 = Generation(2, {0}, "WorkerFailed", 32);
  api::Goodput g = Account(g2, g1);
  EXPECT_DOUBLE_EQ(g.lost_seconds.detect, 2) << "the failure of this uid, not the older pod's";
  EXPECT_EQ(g.recovering_since, Time(30));

  // A node loss nobody timed: detection unknown (0), the recovery counts from the publication.
  report_ = Report(2, 1, 40, 1, 0);
  Account(g2);
  const api::Membership g3 = Generation(3, {}, "NodeLost", 60);
  g = Account(g3, g2);
  EXPECT_DOUBLE_EQ(g.lost_seconds.detect, 2);
  EXPECT_EQ(g.failures, 2);
  EXPECT_EQ(g.recovering_since, Time(60));
}

// One worker of one: its loss empties the world (a generation that never steps), the replacement starts the job again;
// the recovery runs from the failure to that generation's first step.
TEST_F(GoodputTest, ARecoveryThroughGenerationsThatNeverSteppedEndsAtTheNextFirstStep) {
  desired_ = 1;
  const api::Membership g1 = Generation(1, {0}, "JobStarted", 0);
  Account(g1, api::Membership{});
  report_ = Report(1, 1, 10, 1, 0);
  Account(g1);
  const api::Membership g2 = Generation(2, {}, "WorkerFailed", 71);
  Account(g2, g1, {{"w-0", "u-0", At(70)}});
  const api::Membership g3 = Generation(3, {1}, "JobStarted", 90);
  api::Goodput g = Account(g3, g2);
  EXPECT_EQ(g.recovering_since, Time(70));
  EXPECT_EQ(g.wall_seconds, 70) << "nothing stepped since the failure: accounted when stepping starts again";
  report_ = Report(3, 1, 95, 3, 1, 0, 0);
  g = Account(g3);
  EXPECT_EQ(g.last_recovery_seconds, 25);
  EXPECT_EQ(recovered_, 25);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 60);
  EXPECT_DOUBLE_EQ(g.wall_seconds, 95);
  EXPECT_EQ(g.lost_seconds.reschedule, 0) << "a world of nobody steps at no weight";
}

TEST_F(GoodputTest, SuspendedTimeIsNoWallTime) {
  const api::Membership g1 = Generation(1, {0, 1, 2, 3}, "JobStarted", 0);
  Account(g1, api::Membership{});
  report_ = Report(1, 4, 10, 1, 0);
  Account(g1);
  api::Membership g2 = Generation(2, {}, "Suspended", 100);
  api::Goodput g = Account(g2, g1);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 90);
  EXPECT_DOUBLE_EQ(g.wall_seconds, 100);
  // Resumed at 1000 s (startTime moves there), started again at 1010 s, stepping at 1020 s.
  GoodputInput in{goodput_, g2,     Generation(3, {0, 1, 2, 3}, "JobStarted", 1010), 4, 0, {}, {}, report_, Time(1000),
                  "",       At(1e6)};
  auto resumed = AccountGoodput(in);
  ASSERT_TRUE(resumed);
  in.previous = resumed;
  in.before = in.membership;
  in.report = Report(3, 4, 1020, 2, 1);
  in.report->restored_from = std::string(api::restored_from::kCheckpoint);
  auto stepping = AccountGoodput(in);
  ASSERT_TRUE(stepping);
  EXPECT_DOUBLE_EQ(stepping->wall_seconds, 120);
  EXPECT_DOUBLE_EQ(stepping->productive_seconds, 90);
  EXPECT_EQ(stepping->failures, 0);
  EXPECT_DOUBLE_EQ(stepping->lost_seconds.restore, 1) << "resuming restores from a checkpoint: a cost";
}

TEST_F(GoodputTest, NothingIsAccountedBeforeTheFirstGeneration) {
  GoodputInput in;
  in.start_time = Time(0);
  in.now = At(5);
  EXPECT_FALSE(AccountGoodput(in).has_value());
}

TEST(CompletedRecoveryTest, OnlyAReportThatEndsARecoveryCounts) {
  api::Goodput before;
  before.accounted_generation = 2;
  before.recovering_since = Time(100);
  api::Goodput after = before;
  after.accounted_generation = 3;
  after.recovering_since.clear();
  after.last_recovery_seconds = 7.5;
  EXPECT_EQ(CompletedRecovery(before, after), 7.5);
  EXPECT_FALSE(CompletedRecovery(after, after)) << "written again";
  api::Goodput ended = before;  // the job ended (or was suspended) mid-recovery: no report, no recovery
  ended.recovering_since.clear();
  ended.last_recovery_seconds = 3;
  EXPECT_FALSE(CompletedRecovery(before, ended));
  EXPECT_FALSE(CompletedRecovery(std::nullopt, after));
  json status_before = {{"goodput", api::GoodputToJson(before)}};
  json status_after = {{"goodput", api::GoodputToJson(after)}};
  EXPECT_EQ(CompletedRecovery(status_before, status_after), 7.5);
  EXPECT_FALSE(CompletedRecovery(json::object(), status_after));
}

TEST(LiveGoodputTest, TheTimeSinceAsOfCountsWhileTheJobStepsInItsAccountedGeneration) {
  api::Goodput g;
  g.productive_seconds = 80;
  g.wall_seconds = 100;
  g.as_of = Time(100);
  g.accounted_generation = 2;
  LiveFigures at_full = LiveGoodput(g, 2, 4, 4, "Running", At(200));
  EXPECT_DOUBLE_EQ(at_full.productive_seconds, 180);
  EXPECT_DOUBLE_EQ(at_full.wall_seconds, 200);
  EXPECT_DOUBLE_EQ(at_full.ratio, 0.9);
  EXPECT_DOUBLE_EQ(LiveGoodput(g, 2, 3, 4, "Running", At(200)).productive_seconds, 155) << "3 of 4";
  LiveFigures rebuilding = LiveGoodput(g, 3, 4, 4, "Running", At(200));  // generation 3 has not stepped yet
  EXPECT_DOUBLE_EQ(rebuilding.productive_seconds, 80);
  EXPECT_DOUBLE_EQ(rebuilding.ratio, 0.4);
  EXPECT_DOUBLE_EQ(LiveGoodput(g, 2, 4, 4, "Succeeded", At(200)).ratio, 0.8) << "finished: as accounted";
  EXPECT_DOUBLE_EQ(LiveGoodput(g, 2, 4, 4, "Suspended", At(200)).ratio, 0.8);
}

TEST(GoodputMetricsTest, RatioLostSecondsByPhaseAndFailuresPerJob) {
  api::Goodput g;
  g.productive_seconds = 90;
  g.wall_seconds = 100;
  g.ratio = 0.9;
  g.as_of = Time(100);
  g.accounted_generation = 2;
  g.lost_seconds = {3, 10, 2, 0.5, 1};
  g.failures = 1;
  json membership = api::MembershipToJson(Generation(2, {0, 1, 2, 3}, "WorkerJoined", 90));
  json job = {{"metadata", {{"namespace", "ns"}, {"name", "a"}}},
              {"spec", {{"replicas", {{"min", 1}, {"max", 4}}}}},
              {"status",
               {{"phase", "Running"},
                {"replicas", {{"desired", 4}}},
                {"membership", membership},
                {"goodput", api::GoodputToJson(g)}}}};
  kube::Store store;
  store.Upsert("ns/a", std::make_shared<const json>(job));
  store.Upsert("ns/b", std::make_shared<const json>(json{{"metadata", {{"namespace", "ns"}, {"name", "b"}}},
                                                         {"status", {{"phase", "Pending"}}}}));
  JobStateMetrics metrics(&store, [] { return true; }, [] { return At(200); });
  std::map<std::string, std::map<std::string, double>> got;  // family -> "job[/phase]" -> value
  for (const auto& f : metrics.Collect()) {
    for (const auto& m : f.metric) {
      std::string key;
      for (const auto& l : m.label)
        if (l.name == "trainingjob" || l.name == "phase") key += (key.empty() ? "" : "/") + l.value;
      got[f.name][key] = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  EXPECT_DOUBLE_EQ(got["ringmaster_trainingjob_goodput_ratio"]["a"], 190.0 / 200) << "brought forward to now";
  EXPECT_EQ(got["ringmaster_trainingjob_goodput_ratio"].count("b"), 0u) << "no goodput before a generation";
  EXPECT_EQ(got["ringmaster_trainingjob_lost_seconds_total"],
            (std::map<std::string, double>{
                {"a/detect", 3}, {"a/reschedule", 10}, {"a/rebuild", 2}, {"a/restore", 0.5}, {"a/replay", 1}}));
  EXPECT_EQ(got["ringmaster_trainingjob_failures_total"]["a"], 1);
}

// Through PlanJob: the status a publication writes carries goodput; a progress report is folded in once, and a
// reconcile with nothing new writes nothing.
TEST(GoodputPlanTest, TheStatusCarriesGoodputAndIsNotRewrittenWithoutNews) {
  json job = {{"apiVersion", api::kApiVersion},
              {"kind", api::kKind},
              {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "job-uid"}, {"generation", 1}}},
              {"spec",
               {{"replicas", {{"min", 2}, {"max", 2}}},
                {"template", {{"spec", {{"containers", {{{"name", "t"}, {"image", "i"}}}}}}}}}}};
  auto pod = [](int i) {
    return json{{"metadata",
                 {{"name", "j-worker-" + std::to_string(i)},
                  {"uid", "pod-uid-" + std::to_string(i)},
                  {"labels", {{api::kJobNameLabel, "j"}, {api::kWorkerIndexLabel, std::to_string(i)}}}}},
                {"spec", {{"nodeName", "n0"}}},
                {"status",
                 {{"phase", "Running"},
                  {"podIP", "127.64.0." + std::to_string(i + 1)},
                  {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", Time(0)}}}}}}};
  };
  PlanInput in{job, {pod(0), pod(1)}, {{"n0", NodeState{}}}, At(1), {}, {}, ""};
  auto first = PlanJob(in);
  ASSERT_OK(first);
  ASSERT_TRUE(first->status);
  ASSERT_TRUE(first->status->contains("goodput")) << first->status->dump(2);
  EXPECT_EQ((*first->status)["goodput"]["accountedGeneration"], 0);
  in.job["status"] = *first->status;

  in.now = At(30);
  auto idle = PlanJob(in);
  ASSERT_OK(idle);
  EXPECT_FALSE(idle->status) << "time alone changes no goodput";

  in.progress = Report(1, 2, 5, 1, 0);
  in.progress->reporter = "j-worker-0";
  auto reported = PlanJob(in);
  ASSERT_OK(reported);
  ASSERT_TRUE(reported->status);
  EXPECT_EQ((*reported->status)["goodput"]["accountedGeneration"], 1);
  EXPECT_EQ((*reported->status)["goodput"]["asOf"], Time(5));
  in.job["status"] = *reported->status;
  in.now = At(60);
  auto again = PlanJob(in);
  ASSERT_OK(again);
  EXPECT_FALSE(again->status) << (again->status ? again->status->dump(2) : "");
}

}  // namespace
}  // namespace ringmaster::controller
