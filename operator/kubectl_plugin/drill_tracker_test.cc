#include "operator/kubectl_plugin/drill_tracker.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"
#include "base/time_format.h"

namespace ringmaster::kubectl_plugin {
namespace {

Clock::time_point T(const std::string& t) { return *ParseRfc3339("2026-11-28T" + t + "Z"); }

api::Membership Generation(int64_t g, const std::vector<std::pair<std::string, std::string>>& pods,
                           const std::string& reason, const std::string& at) {
  api::Membership m;
  m.generation = g;
  int32_t rank = 0;
  for (const auto& [pod, uid] : pods) m.members.push_back({pod, uid, rank++, "10.0.0.1", "n"});
  m.reason = reason;
  m.changed_at = "2026-11-28T" + at + "Z";
  return m;
}

api::ProgressReport Progress(int64_t g, int world, const std::string& at) {
  api::ProgressReport p;
  p.generation = g;
  p.reporter = "train-worker-0";
  p.world_size = world;
  p.first_step = 40;
  p.resumed_from = 39;
  p.first_step_at = "2026-11-28T" + at + "Z";
  p.restored_from = "peer";
  return p;
}

const Victim kVictim{5, 3, 1, "train-worker-1", "uid-1"};

TEST(DrillTrackerTest, DetectionIsTheFirstGenerationWithoutThePodAndRecoveryItsFirstStepAfterTheKill) {
  DrillTracker t(kVictim, T("10:00:00.500"));
  // Still generation 5, and the previous generation's progress record (its first step long before the kill).
  t.SeeMembership(Generation(5, {{"train-worker-0", "uid-0"}, {"train-worker-1", "uid-1"}}, "JobStarted", "09:59:00"),
                  T("10:00:00.600"));
  t.SeeProgress(Progress(5, 3, "09:59:01.000"));
  EXPECT_FALSE(t.detection().has_value());
  EXPECT_FALSE(t.recovery().has_value());
  EXPECT_NE(t.WaitingFor("ConfigMap ns/x key _progress").find("without pod train-worker-1 (uid uid-1)"),
            std::string::npos);

  t.SeeMembership(
      Generation(6, {{"train-worker-0", "uid-0"}, {"train-worker-2", "uid-2"}}, "WorkerRemoved", "10:00:02"),
      T("10:00:02.900"));
  ASSERT_TRUE(t.detection().has_value());
  EXPECT_EQ(t.detection()->generation, 6);
  EXPECT_EQ(t.detection()->reason, "WorkerRemoved");
  EXPECT_DOUBLE_EQ(*t.detection_seconds(), 1.5);
  EXPECT_NE(t.WaitingFor("ConfigMap ns/x key _progress").find("generation 5's, first step at 2026-11-28T09:59:01"),
            std::string::npos)
      << t.WaitingFor("ConfigMap ns/x key _progress");

  // A later generation (the replacement, same name, new uid) does not move detection back.
  t.SeeMembership(Generation(7, {{"train-worker-0", "uid-0"}, {"train-worker-2", "uid-2"}, {"train-worker-1", "new"}},
                             "WorkerJoined", "10:00:09"),
                  T("10:00:09.100"));
  EXPECT_EQ(t.detection()->generation, 6);
  EXPECT_DOUBLE_EQ(*t.detection_seen_seconds(), 2.4);

  t.SeeProgress(Progress(6, 2, "10:00:04.000"));
  ASSERT_TRUE(t.recovery().has_value());
  EXPECT_EQ(t.recovery()->world_size, 2);
  EXPECT_DOUBLE_EQ(*t.recovery_seconds(), 3.5);
  t.SeeProgress(Progress(7, 3, "10:00:10.000"));
  EXPECT_EQ(t.recovery()->generation, 6);  // the first recovery stays

  const std::string report = FormatDrillResult(t, std::nullopt);
  EXPECT_NE(report.find("killed:     rank 1, pod train-worker-1 (uid uid-1) of generation 5 (world size 3)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("detection:  1.5s  generation 6 (WorkerRemoved, world size 2) published 2026-11-28T10:00:02Z "
                        "(seen by the drill after 2.4s)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("recovery:   3.5s  generation 6 committed step 40 at 2026-11-28T10:00:04.000Z at world size 2, "
                        "restored from peer, 0 steps replayed"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("job history: not reported yet"), std::string::npos) << report;
}

// A replacement under the same name with a new uid is a detection too (the old pod is gone from the world), and a
// generation seen only as an Event (superseded between two polls) counts, when it names the pod as leaving.
TEST(DrillTrackerTest, ReplacementsAndGenerationsSeenOnlyAsEvents) {
  DrillTracker replaced(kVictim, T("10:00:00"));
  replaced.SeeMembership(
      Generation(6, {{"train-worker-0", "uid-0"}, {"train-worker-1", "uid-9"}, {"train-worker-2", "uid-2"}},
                 "WorkerJoined", "10:00:07"),
      T("10:00:07.500"));
  ASSERT_TRUE(replaced.detection().has_value());
  EXPECT_EQ(replaced.detection()->generation, 6);

  DrillTracker t(kVictim, T("10:00:00"));
  t.SeeMembership(Generation(7, {{"train-worker-0", "uid-0"}, {"train-worker-2", "uid-2"}, {"train-worker-1", "n"}},
                             "WorkerJoined", "10:00:08"),
                  T("10:00:08.200"));
  EventRecord unrelated, other_pod, joined_only, left;
  unrelated.message = "worker train-worker-1 failed (exit code 137)";
  other_pod.message = "generation 6, world size 2 (WorkerFailed: train-worker-10)";
  joined_only.message = "generation 4, world size 3 (joined: train-worker-1)";  // before the kill
  left.message = "generation 6, world size 2 (WorkerRemoved: train-worker-1)";
  left.reason = "WorkerRemoved";
  left.first = T("10:00:03");
  t.SeeEvents({unrelated, other_pod, joined_only});
  EXPECT_EQ(t.detection()->generation, 7);
  t.SeeEvents({left});
  EXPECT_EQ(t.detection()->generation, 6);
  EXPECT_EQ(t.detection()->reason, "WorkerRemoved");
  EXPECT_DOUBLE_EQ(*t.detection_seconds(), 3.0);
  EXPECT_FALSE(t.detection_seen_seconds().has_value());  // seen only as an Event
}

TEST(DrillTrackerTest, LeaversNamedInAnEventMessage) {
  EXPECT_TRUE(MessageNamesLeaver("generation 6, world size 2 (WorkerFailed: a-worker-1)", "a-worker-1"));
  EXPECT_TRUE(
      MessageNamesLeaver("generation 6, world size 2 (WorkerFailed: a-worker-0, a-worker-1; joined: b)", "a-worker-1"));
  EXPECT_TRUE(MessageNamesLeaver("generation 6, world size 2 in 1 pod (WorkerFailed: a-worker-1:1)", "a-worker-1"));
  EXPECT_FALSE(MessageNamesLeaver("generation 6, world size 2 (WorkerFailed: a-worker-10)", "a-worker-1"));
  EXPECT_FALSE(MessageNamesLeaver("generation 6, world size 2 (WorkerFailed: xa-worker-1)", "a-worker-1"));
  EXPECT_FALSE(MessageNamesLeaver("generation 6, world size 3 (joined: a-worker-1)", "a-worker-1"));
}

// Nothing after the kill: a record of the generation in force at the kill, or one whose first step came before
// it, is no recovery; the timeout names what was missing.
TEST(DrillTrackerTest, NoRecoveryFromOldRecords) {
  DrillTracker t(kVictim, T("10:00:00"));
  t.SeeMembership(Generation(6, {{"train-worker-0", "uid-0"}}, "WorkerFailed", "10:00:01"), T("10:00:01.5"));
  t.SeeProgress(Progress(5, 3, "10:00:05"));  // the killed generation's (a late writer)
  t.SeeProgress(Progress(6, 1, "09:59:59"));  // before the kill (clocks)
  EXPECT_FALSE(t.recovery().has_value());
  t.NoteNoProgress("it has no _progress key (do the workers run a runtime that writes it?)");
  DrillTracker fresh(kVictim, T("10:00:00"));
  fresh.SeeMembership(Generation(6, {{"train-worker-0", "uid-0"}}, "WorkerFailed", "10:00:01"), T("10:00:01.5"));
  fresh.NoteNoProgress("it has no _progress key (do the workers run a runtime that writes it?)");
  const std::string waiting = fresh.WaitingFor("ConfigMap ns/train-peer-reports key _progress");
  EXPECT_NE(waiting.find("the first step of a generation after generation 5 (detected at generation 6)"),
            std::string::npos)
      << waiting;
  EXPECT_NE(waiting.find("ConfigMap ns/train-peer-reports key _progress: it has no _progress key"), std::string::npos)
      << waiting;
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin
