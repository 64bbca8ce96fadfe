#include "operator/controller/written_objects.h"

#include <gtest/gtest.h>

namespace ringmaster::controller {
namespace {

kube::ObjectPtr Job(const std::string& rv, int generation) {
  return std::make_shared<const nlohmann::json>(
      nlohmann::json{{"metadata", {{"name", "j"}, {"namespace", "ns"}, {"resourceVersion", rv}}},
                     {"status", {{"membership", {{"generation", generation}}}}}});
}

TEST(WrittenObjectsTest, NothingWrittenGivesTheCache) {
  WrittenObjects w;
  auto cached = Job("5", 1);
  EXPECT_EQ(w.Freshest("ns/j", cached), cached);
  EXPECT_EQ(w.Freshest("ns/j", nullptr), nullptr);
}

TEST(WrittenObjectsTest, AStaleCacheGivesTheWrittenObjectUntilItCatchesUp) {
  WrittenObjects w;
  auto before = Job("5", 1), written = Job("6", 2);
  w.Wrote("ns/j", "5", *written);
  EXPECT_EQ(*w.Freshest("ns/j", before), *written);  // the watch has not brought our write yet
  EXPECT_EQ(*w.Freshest("ns/j", before), *written);
  EXPECT_EQ(w.Freshest("ns/other", before), before);
  auto caught_up = Job("6", 2);
  EXPECT_EQ(w.Freshest("ns/j", caught_up), caught_up);
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ(w.Freshest("ns/j", before), before);  // forgotten: the cache is the truth again
}

TEST(WrittenObjectsTest, ALaterVersionByAnyoneElseWins) {
  WrittenObjects w;
  w.Wrote("ns/j", "5", *Job("6", 2));
  auto newer = Job("9", 2);  // someone wrote after us; the watch delivered both
  EXPECT_EQ(w.Freshest("ns/j", newer), newer);
  EXPECT_EQ(w.size(), 0u);
}

TEST(WrittenObjectsTest, ADeletedJobDropsItsRecord) {
  WrittenObjects w;
  w.Wrote("ns/j", "5", *Job("6", 2));
  EXPECT_EQ(w.Freshest("ns/j", nullptr), nullptr);
  EXPECT_EQ(w.size(), 0u);
}

TEST(WrittenObjectsTest, TheWrittenObjectComesBackWholeAndOwnedByTheReader) {
  WrittenObjects w;
  nlohmann::json written = *Job("6", 2);
  written["status"]["membership"]["workers"] = nlohmann::json::array({{{"pod", "j-0"}, {"rank", 0}}});
  w.Wrote("ns/j", "5", written);
  kube::ObjectPtr first = w.Freshest("ns/j", Job("5", 1)), second = w.Freshest("ns/j", Job("5", 1));
  EXPECT_EQ(*first, written);
  EXPECT_NE(first, second);  // each reader its own snapshot, decoded from the packed record
}

TEST(WrittenObjectsTest, WritesInARowWhileTheCacheLagsGiveTheLast) {
  WrittenObjects w;
  auto stale = Job("5", 1), first = Job("6", 2), second = Job("7", 3);
  w.Wrote("ns/j", "5", *first);
  EXPECT_EQ(*w.Freshest("ns/j", stale), *first);
  w.Wrote("ns/j", "6", *second);  // planned from `first` while the cache still held "5"
  EXPECT_EQ(*w.Freshest("ns/j", stale), *second);
  EXPECT_EQ(*w.Freshest("ns/j", Job("6", 2)), *second);  // the cache has our first write only
  auto caught_up = Job("7", 3);
  EXPECT_EQ(w.Freshest("ns/j", caught_up), caught_up);
  EXPECT_EQ(w.size(), 0u);
}

}  // namespace
}  // namespace ringmaster::controller
