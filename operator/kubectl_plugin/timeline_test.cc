#include "operator/kubectl_plugin/timeline.h"

#include <gtest/gtest.h>

#include "base/time_format.h"

namespace ringmaster::kubectl_plugin {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Clock::time_point T(const std::string& t) { return *ParseRfc3339("2026-11-28T" + t + "Z"); }

EventRecord Event(const std::string& reason, const std::string& message, const std::string& at) {
  EventRecord e;
  e.kind = "TrainingJob";
  e.object = "train";
  e.reason = reason;
  e.message = message;
  e.first = e.last = T(at);
  return e;
}

api::Membership Current(int64_t generation, int world, const std::string& reason, const std::string& message,
                        const std::string& at) {
  api::Membership m;
  m.generation = generation;
  for (int r = 0; r < world; ++r) m.members.push_back({"train-worker-" + std::to_string(r), "u", r, "10.0.0.1", "n"});
  m.reason = reason;
  m.message = message;
  m.changed_at = "2026-11-28T" + at + "Z";
  return m;
}

TEST(GenerationMessageTest, ReadsTheHeadline) {
  auto h = ParseGenerationMessage("generation 12, world size 3 (WorkerFailed: train-worker-1)");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->generation, 12);
  EXPECT_EQ(h->world_size, 3);
  auto pods = ParseGenerationMessage("generation 2, world size 4 in 2 pods (joined: a)");
  ASSERT_TRUE(pods.has_value());
  EXPECT_EQ(pods->world_size, 4);
  EXPECT_TRUE(ParseGenerationMessage("generation 5, world size 0").has_value());
  EXPECT_FALSE(ParseGenerationMessage("worker train-worker-1 failed (exit code 137)").has_value());
  EXPECT_FALSE(ParseGenerationMessage("generation x, world size 3").has_value());
  EXPECT_FALSE(ParseGenerationMessage("generation 3, world size 3x").has_value());
  EXPECT_FALSE(ParseGenerationMessage("worker a leaves generation 3 at its next step boundary").has_value());
  EXPECT_EQ(ChangeDetail("generation 2, world size 2 (WorkerRemoved: train-worker-1)"),
            "WorkerRemoved: train-worker-1");
  EXPECT_EQ(ChangeDetail("no parentheses"), "no parentheses");
}

// Events arrive in any order; the failed pod's own WorkerFailed Event (not a generation) is skipped; each
// generation lasts until the next one's publication; the current one until now.
TEST(TimelineTest, OrdersGenerationsAndMeasuresEach) {
  std::vector<EventRecord> events = {
      Event("WorkerJoined", "generation 3, world size 3 (joined: train-worker-1)", "10:01:10"),
      Event("WorkerFailed", "worker train-worker-1 failed (exit code 137)", "10:01:00"),
      Event("JobStarted", "generation 1, world size 3 (joined: train-worker-0, train-worker-1, train-worker-2)",
            "10:00:00"),
      Event("WorkerFailed", "generation 2, world size 2 (WorkerFailed: train-worker-1)", "10:01:05"),
  };
  auto current = Current(3, 3, "WorkerJoined", "generation 3, world size 3 (joined: train-worker-1)", "10:01:10");
  auto spans = BuildTimeline(events, current, std::nullopt, T("10:05:15"));
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].generation, 1);
  EXPECT_EQ(spans[0].reason, "JobStarted");
  EXPECT_EQ(spans[0].lasted, milliseconds(seconds(65)));
  EXPECT_FALSE(spans[0].current);
  EXPECT_EQ(spans[1].generation, 2);
  EXPECT_EQ(spans[1].world_size, 2);
  EXPECT_EQ(spans[1].reason, "WorkerFailed");
  EXPECT_EQ(spans[1].lasted, milliseconds(seconds(5)));
  EXPECT_EQ(spans[2].generation, 3);
  EXPECT_TRUE(spans[2].current);
  EXPECT_EQ(spans[2].lasted, milliseconds(seconds(245)));

  const std::string table = FormatTimeline(spans);
  EXPECT_EQ(table,
            "GEN  PUBLISHED             WORLD  LASTED        REASON        CHANGE\n"
            "1    2026-11-28T10:00:00Z  3      1m05s         JobStarted    joined: train-worker-0, train-worker-1, "
            "train-worker-2\n"
            "2    2026-11-28T10:01:05Z  2      5s            WorkerFailed  WorkerFailed: train-worker-1\n"
            "3    2026-11-28T10:01:10Z  3      4m05s so far  WorkerJoined  joined: train-worker-1\n");
}

// A finished job's last generation ends at its completion time; generations whose Events expired leave a gap,
// and the one before a gap lasted an unknown time.
TEST(TimelineTest, FinishedJobsAndMissingEvents) {
  std::vector<EventRecord> events = {
      Event("WorkerFailed", "generation 4, world size 2 (WorkerFailed: b)", "10:10:00"),
      Event("WorkerJoined", "generation 5, world size 3 (joined: b)", "10:10:30"),
  };
  auto current = Current(7, 2, "ScaledDown", "generation 7, world size 2 (ScaledDown: c)", "10:20:00");
  auto spans = BuildTimeline(events, current, T("10:21:30"), T("11:00:00"));
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].lasted, milliseconds(seconds(30)));
  EXPECT_FALSE(spans[1].lasted.has_value());  // generation 6 is missing: when 5 ended is unknown
  EXPECT_EQ(spans[2].generation, 7);
  EXPECT_FALSE(spans[2].current);  // the job ended
  EXPECT_EQ(spans[2].lasted, milliseconds(seconds(90)));
  const std::string table = FormatTimeline(spans);
  EXPECT_NE(table.find("...  generations 1-3: no Event left"), std::string::npos) << table;
  EXPECT_NE(table.find("...  generation 6: no Event left"), std::string::npos) << table;
  EXPECT_NE(table.find("5    2026-11-28T10:10:30Z  3      ?"), std::string::npos) << table;
  EXPECT_EQ(table.find("so far"), std::string::npos) << table;
}

// The status's record alone (Events all gone, or a suspension's empty generation, which has no Event); two
// Events for one generation keep the earlier; nothing published yet.
TEST(TimelineTest, StatusAloneDuplicatesAndNothing) {
  auto suspended = Current(9, 0, "Suspended", "generation 9, world size 0 (the job is suspended: x)", "10:00:00");
  auto alone = BuildTimeline({}, suspended, std::nullopt, T("10:00:30"));
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].world_size, 0);
  EXPECT_EQ(alone[0].lasted, milliseconds(seconds(30)));

  std::vector<EventRecord> twice = {Event("JobStarted", "generation 1, world size 2 (joined: a, b)", "10:00:03"),
                                    Event("JobStarted", "generation 1, world size 2 (joined: a, b)", "10:00:01")};
  auto spans = BuildTimeline(twice, std::nullopt, std::nullopt, T("10:01:00"));
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].published, T("10:00:01"));
  EXPECT_FALSE(spans[0].lasted.has_value());  // not the status's generation: its end is unknown

  EXPECT_EQ(FormatTimeline(BuildTimeline({}, std::nullopt, std::nullopt, T("10:00:00"))),
            "No generation published yet.\n");
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin
