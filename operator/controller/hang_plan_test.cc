// A member's hang report (api/hang_report.h) through PlanJob: the next generation with reason Hung and the same
// members, a Warning Event, status.hangs and status.goodput (lostSeconds.hung, failures) -- once, however often the
// same report is seen; stale reports and reports from non-members do nothing.
#include <gtest/gtest.h>

#include "api/hang_report.h"
#include "api/names.h"
#include "base/status_test_macros.h"
#include "base/time_format.h"
#include "operator/controller/job_plan.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

const Clock::time_point kT0 = Clock::from_time_t(1'800'000'000);
Clock::time_point At(double s) { return kT0 + milliseconds(static_cast<int64_t>(s * 1000)); }
std::string Time(double s) { return FormatRfc3339(At(s), TimePrecision::kMillis); }

json Job() {
  return {{"apiVersion", api::kApiVersion},
          {"kind", api::kKind},
          {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "job-uid"}, {"generation", 1}}},
          {"spec",
           {{"replicas", {{"min", 2}, {"max", 2}}},
            {"template", {{"spec", {{"containers", {{{"name", "t"}, {"image", "i"}}}}}}}}}}};
}

json Pod(int i) {
  return {{"metadata",
           {{"name", "j-worker-" + std::to_string(i)},
            {"uid", "pod-uid-" + std::to_string(i)},
            {"labels", {{api::kJobNameLabel, "j"}, {api::kWorkerIndexLabel, std::to_string(i)}}}}},
          {"spec", {{"nodeName", "n0"}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", "127.64.0." + std::to_string(i + 1)},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", Time(0)}}}}}}};
}

api::HangReport Hang(const std::string& reporter, int64_t generation, double stalled, double reported_at) {
  return {reporter, generation, stalled, 0.25, 120, Time(reported_at)};
}

// A job of two workers in generation 1 whose first step committed at 5 s (accounted), as of 10 s.
class HangPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = PlanInput{Job(), {Pod(0), Pod(1)}, {{"n0", NodeState{}}}, At(1), {}, {}, ""};
    Apply();
    api::ProgressReport r;
    r.generation = 1;
    r.reporter = "j-worker-0";
    r.world_size = 2;
    r.first_step = 1;
    r.first_step_at = Time(5);
    r.restored_from = std::string(api::restored_from::kInitial);
    in_.progress = r;
    in_.now = At(10);
    Apply();
    ASSERT_EQ(in_.job["status"]["membership"]["generation"], 1);
    ASSERT_EQ(in_.job["status"]["goodput"]["accountedGeneration"], 1);
  }
  // Plans at in_.now and applies the plan's status, as the apiserver would.
  JobPlan Apply() {
    auto plan = PlanJob(in_);
    EXPECT_OK(plan) << plan.status();
    if (!plan.ok()) return {};
    if (plan->status) in_.job["status"] = *plan->status;
    return *plan;
  }
  PlanInput in_;
};

TEST_F(HangPlanTest, AHangReportOfTheCurrentGenerationRebuildsItOnceAsHung) {
  in_.hang_reports = {Hang("j-worker-1", 1, 35, 95)};  // no step since 60 s
  in_.now = At(100);
  JobPlan plan = Apply();
  const json& status = in_.job["status"];
  ASSERT_TRUE(plan.status) << "no new status";
  EXPECT_EQ(status["membership"]["generation"], 2);
  EXPECT_EQ(status["membership"]["reason"], "Hung");
  EXPECT_EQ(status["membership"]["worldSize"], 2);
  EXPECT_EQ(status["membership"]["members"][0]["pod"], "j-worker-0") << "the same members, in their order";
  EXPECT_EQ(status["membership"]["members"][1]["pod"], "j-worker-1");
  EXPECT_EQ(status["hangs"], 1);
  EXPECT_EQ(status["restartCount"], 0) << "no worker was replaced";
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_TRUE(plan.deletes.empty());
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "Hung");
  EXPECT_NE(plan.events[0].message.find("j-worker-1 (no step for 35 s)"), std::string::npos) << plan.events[0].message;
  // Goodput: generation 1 stepped from 5 s until the stall began (60 s); the stall to the Hung generation is lost.
  const json& g = status["goodput"];
  EXPECT_EQ(g["failures"], 1);
  EXPECT_DOUBLE_EQ(g["lostSeconds"]["hung"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(g["lostSeconds"]["detect"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(g["productiveSeconds"].get<double>(), 55);
  EXPECT_EQ(g["recoveringSince"], Time(60));

  // The same report seen again (the ConfigMap still holds it): stale now, nothing more.
  in_.now = At(101);
  JobPlan again = Apply();
  EXPECT_FALSE(again.status) << again.status->dump(2);
  EXPECT_TRUE(again.events.empty());
  EXPECT_EQ(in_.job["status"]["hangs"], 1);
  EXPECT_EQ(in_.job["status"]["membership"]["generation"], 2);

  // A second reporter of the same hang, late: stale too.
  in_.hang_reports.push_back(Hang("j-worker-0", 1, 36, 96));
  EXPECT_FALSE(Apply().status);

  // A hang of generation 2 is a new one.
  in_.hang_reports = {Hang("j-worker-0", 2, 31, 140)};
  in_.now = At(141);
  ASSERT_TRUE(Apply().status);
  EXPECT_EQ(in_.job["status"]["membership"]["generation"], 3);
  EXPECT_EQ(in_.job["status"]["hangs"], 2);
  EXPECT_EQ(in_.job["status"]["goodput"]["failures"], 2);
}

TEST_F(HangPlanTest, AReportFromANonMemberOrAboutAnotherGenerationChangesNothing) {
  in_.now = At(100);
  for (const api::HangReport& r :
       {Hang("j-worker-7", 1, 35, 95), Hang("j-worker-1", 0, 35, 95), Hang("j-worker-1", 2, 35, 95)}) {
    in_.hang_reports = {r};
    JobPlan plan = Apply();
    EXPECT_FALSE(plan.status) << r.reporter << " " << r.generation << ": " << plan.status->dump(2);
    EXPECT_TRUE(plan.events.empty());
  }
  EXPECT_FALSE(in_.job["status"].contains("hangs"));
}

}  // namespace
}  // namespace ringmaster::controller
