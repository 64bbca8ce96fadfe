#include "operator/kubectl_plugin/progress.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::kubectl_plugin {
namespace {

using nlohmann::json;

constexpr char kRecord[] =
    R"({"generation":6,"reporter":"train-worker-0","worldSize":2,"firstStep":57,)"
    R"("firstStepAt":"2026-11-28T10:00:04.456Z","resumedFrom":56,"restoredFrom":"peer","replayedSteps":2,)"
    R"("rebuildSeconds":1.25,"restoreSeconds":0.3,"stepSeconds":0.1})";

TEST(ProgressRecordTest, FromThePeerReportsConfigMap) {
  auto none = ProgressOfConfigMap(json{{"data", {{"train-worker-1", "{}"}}}});  // a peer report only
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  auto empty = ProgressOfConfigMap(json{{"metadata", {{"name", "x"}}}});
  ASSERT_OK(empty);
  EXPECT_FALSE(empty->has_value());
  auto one = ProgressOfConfigMap(json{{"data", {{"_progress", kRecord}}}});
  ASSERT_OK(one);
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->generation, 6);
  EXPECT_EQ((*one)->first_step_at, "2026-11-28T10:00:04.456Z");
  EXPECT_FALSE(ProgressOfConfigMap(json{{"data", {{"_progress", "garbage"}}}}).ok());
}

TEST(GoodputLinesTest, AbsentIsNotReportedYet) {
  EXPECT_EQ(FormatGoodput(std::nullopt), std::vector<std::string>{"not reported yet"});
  EXPECT_EQ(GoodputHistory(std::nullopt), "not reported yet (status.goodput)");
}

TEST(GoodputLinesTest, EveryFigureOnItsLine) {
  api::Goodput g;
  g.ratio = 0.928;
  g.productive_seconds = 290;
  g.wall_seconds = 312.5;
  g.as_of = "2026-11-28T10:05:00.000Z";
  g.accounted_generation = 7;
  g.lost_seconds = {2, 3, 1.1, 0.3, 0.84};
  g.failures = 1;
  g.last_recovery_seconds = 4.1;
  EXPECT_EQ(FormatGoodput(g),
            (std::vector<std::string>{
                "92.8% productive (4m50s of 5m12s wall, as of 2026-11-28T10:05:00.000Z, through generation 7)",
                "lost to 1 failure: detect 2.0s, reschedule 3.0s, rebuild 1.1s, restore 0.3s, replay 0.8s",
                "last recovery: 4.1s"}));
  EXPECT_EQ(GoodputHistory(g),
            "last recovery 4.1s; lost: detect 2.0s, reschedule 3.0s, rebuild 1.1s, restore 0.3s, replay 0.8s "
            "(1 failure); goodput 92.8%");

  api::Goodput early;  // before any recovery completed, one under way
  early.failures = 2;
  early.recovering_since = "2026-11-28T10:06:00.000Z";
  auto lines = FormatGoodput(early);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].substr(0, 19), "lost to 2 failures:");
  EXPECT_EQ(lines[2], "last recovery: none yet");
  EXPECT_EQ(lines[3], "recovering from a failure at 2026-11-28T10:06:00.000Z");
  EXPECT_EQ(GoodputHistory(early).substr(0, 30), "last recovery not reported yet");
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin
