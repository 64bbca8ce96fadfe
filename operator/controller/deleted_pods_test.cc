#include "operator/controller/deleted_pods.h"

#include <gtest/gtest.h>

#include "base/time_format.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;
using std::chrono::system_clock;

json Pod(const std::string& name, const std::string& uid) {
  return {{"metadata", {{"name", name}, {"uid", uid}}}, {"status", {{"phase", "Running"}}}};
}

TEST(DeletedPodsTest, ADeletedPodTheCacheStillShowsUndeletedIsOverlaidAsDeleting) {
  DeletedPods deleted;
  const auto when = system_clock::now();
  deleted.Deleted("ns/job", "uid-1", when);
  std::vector<json> pods = {Pod("w-0", "uid-0"), Pod("w-1", "uid-1")};
  deleted.Overlay("ns/job", &pods);
  EXPECT_FALSE(pods[0]["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(pods[1]["metadata"].value("deletionTimestamp", ""), FormatRfc3339(when));
  EXPECT_EQ(deleted.size(), 1u) << "kept until the cache shows the deletion";
  // The same stale cache again: overlaid again.
  std::vector<json> again = {Pod("w-1", "uid-1")};
  deleted.Overlay("ns/job", &again);
  EXPECT_TRUE(again[0]["metadata"].contains("deletionTimestamp"));
}

TEST(DeletedPodsTest, TheRecordGoesOnceTheCacheShowsThePodDeletingOrGone) {
  DeletedPods deleted;
  deleted.Deleted("ns/job", "uid-1", system_clock::now());
  deleted.Deleted("ns/job", "uid-2", system_clock::now());
  std::vector<json> pods = {Pod("w-1", "uid-1")};
  pods[0]["metadata"]["deletionTimestamp"] = "2026-11-28T01:00:00Z";  // the watch brought it back
  deleted.Overlay("ns/job", &pods);                                   // and uid-2 is gone
  EXPECT_EQ(pods[0]["metadata"].value("deletionTimestamp", ""), "2026-11-28T01:00:00Z") << "the cache's own time";
  EXPECT_EQ(deleted.size(), 0u);
  // A new pod under the old name (the replacement, another uid) is nobody's deletion.
  std::vector<json> replacement = {Pod("w-1", "uid-3")};
  deleted.Overlay("ns/job", &replacement);
  EXPECT_FALSE(replacement[0]["metadata"].contains("deletionTimestamp"));
}

TEST(DeletedPodsTest, JobsAreKeptApartAndForgotten) {
  DeletedPods deleted;
  deleted.Deleted("ns/a", "uid-1", system_clock::now());
  std::vector<json> other = {Pod("w-1", "uid-1")};
  deleted.Overlay("ns/b", &other);
  EXPECT_FALSE(other[0]["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(deleted.size(), 1u);
  deleted.Forget("ns/a");
  EXPECT_EQ(deleted.size(), 0u);
}

}  // namespace
}  // namespace ringmaster::controller
