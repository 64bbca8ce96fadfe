#include "operator/kubectl_plugin/event_list.h"

#include <gtest/gtest.h>

#include "base/time_format.h"

namespace ringmaster::kubectl_plugin {
namespace {

using nlohmann::json;

Clock::time_point At(const std::string& t) { return *ParseRfc3339(t); }

json CoreEvent(const std::string& name, const std::string& kind, const std::string& object, const std::string& reason,
               const std::string& first, const std::string& last, int count, const std::string& message) {
  return {{"metadata", {{"name", name}}},
          {"involvedObject", {{"kind", kind}, {"name", object}}},
          {"type", "Normal"},
          {"reason", reason},
          {"message", message},
          {"firstTimestamp", first},
          {"lastTimestamp", last},
          {"count", count}};
}

TEST(EventListTest, ReadsCoreAndEventsApiShapes) {
  EventRecord core = ParseEvent(CoreEvent("e1", "TrainingJob", "train", "JobStarted", "2026-11-28T10:00:00Z",
                                          "2026-11-28T10:00:05Z", 2, "generation 1, world size 3 (joined: a)"));
  EXPECT_EQ(core.kind, "TrainingJob");
  EXPECT_EQ(core.count, 2);
  EXPECT_EQ(core.first, At("2026-11-28T10:00:00Z"));
  EXPECT_EQ(core.last, At("2026-11-28T10:00:05Z"));

  // events.k8s.io/v1 as core/v1 shows it: eventTime and series, null timestamps.
  json series = {{"metadata", {{"name", "e2"}}},
                 {"involvedObject", {{"kind", "Pod"}, {"name", "train-worker-0"}}},
                 {"type", "Warning"},
                 {"reason", "BackOff"},
                 {"eventTime", "2026-11-28T10:00:01.123456Z"},
                 {"firstTimestamp", nullptr},
                 {"lastTimestamp", nullptr},
                 {"series", {{"count", 4}, {"lastObservedTime", "2026-11-28T10:01:00.000000Z"}}}};
  EventRecord e = ParseEvent(series);
  EXPECT_EQ(e.first, At("2026-11-28T10:00:01.123456Z"));
  EXPECT_EQ(e.last, At("2026-11-28T10:01:00Z"));
  EXPECT_EQ(e.count, 4);

  EventRecord garbage = ParseEvent(json{{"metadata", 7}, {"count", "x"}, {"firstTimestamp", "yesterday"}});
  EXPECT_EQ(garbage.count, 1);
  EXPECT_FALSE(garbage.first.has_value());
}

TEST(EventListTest, SortedByTimeAndPrintedAsATable) {
  std::vector<EventRecord> events =
      ParseEventList(json{{"items",
                           {CoreEvent("b", "Pod", "train-worker-1", "Killing", "2026-11-28T10:00:10Z",
                                      "2026-11-28T10:00:10Z", 1, "Stopping container trainer"),
                            CoreEvent("a", "TrainingJob", "train", "JobStarted", "2026-11-28T10:00:00Z",
                                      "2026-11-28T10:00:00Z", 1, "generation 1, world size 3\n(joined: a)"),
                            CoreEvent("c", "Pod", "train-worker-0", "BackOff", "2026-11-28T09:58:00Z",
                                      "2026-11-28T10:00:20Z", 3, "Back-off restarting")}}});
  SortByTime(events);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "a");
  EXPECT_EQ(events[1].name, "b");
  EXPECT_EQ(events[2].name, "c");  // by when it was last seen
  const std::string table = FormatEventTable(events, At("2026-11-28T10:01:05Z"));
  std::vector<std::string> lines;
  for (size_t from = 0; from < table.size();) {
    size_t nl = table.find('\n', from);
    lines.push_back(table.substr(from, nl - from));
    from = nl + 1;
  }
  ASSERT_EQ(lines.size(), 4u) << table;
  EXPECT_EQ(lines[0].find("AGE"), 0u);
  const size_t type_col = lines[0].find("TYPE"), object_col = lines[0].find("OBJECT");
  EXPECT_EQ(lines[1].substr(0, 5), "1m05s");
  EXPECT_EQ(lines[1].find("Normal"), type_col) << table;
  EXPECT_EQ(lines[1].find("trainingjob/train"), object_col) << table;
  EXPECT_NE(lines[1].find("world size 3 (joined: a)"), std::string::npos) << "one line per event: " << table;
  EXPECT_EQ(lines[2].find("pod/train-worker-1"), object_col) << table;
  EXPECT_EQ(lines[3].substr(0, 19), "45s (x3 over 3m05s)") << table;
  EXPECT_EQ(FormatEventTable({}, Clock::now()), "No events.\n");
}

TEST(EventListTest, WorkerPodsOfAJobByName) {
  EXPECT_TRUE(IsWorkerPodName("train", "train-worker-0"));
  EXPECT_TRUE(IsWorkerPodName("train", "train-worker-17"));
  EXPECT_FALSE(IsWorkerPodName("train", "train-workers"));
  EXPECT_FALSE(IsWorkerPodName("train", "train-worker-"));
  EXPECT_FALSE(IsWorkerPodName("train", "train-worker-1x"));
  EXPECT_FALSE(IsWorkerPodName("train", "train-worker-01"));  // not a name the operator gives
  EXPECT_FALSE(IsWorkerPodName("train", "other-worker-0"));
  EXPECT_FALSE(IsWorkerPodName("train", "train2-worker-0"));
  EXPECT_FALSE(IsWorkerPodName("train", "train-worker-99999999999999"));
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin
