#include "operator/controller/applied_intents.h"

#include <gtest/gtest.h>

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

TEST(AppliedIntentsTest, ARecordIsForOneUidOfAJob) {
  AppliedIntents applied;
  EXPECT_FALSE(applied.OwnedObjectsEnsured("ns/job", "uid-1"));
  applied.MarkOwnedObjectsEnsured("ns/job", "uid-1");
  EXPECT_TRUE(applied.OwnedObjectsEnsured("ns/job", "uid-1"));
  EXPECT_FALSE(applied.OwnedObjectsEnsured("ns/job", "uid-2")) << "the same name created again is a new job";
  EXPECT_FALSE(applied.OwnedObjectsEnsured("ns/other", "uid-1"));
  applied.MarkPodGroupApplied("ns/job", "uid-2", json{{"spec", {{"minMember", 4}}}});
  EXPECT_FALSE(applied.OwnedObjectsEnsured("ns/job", "uid-1")) << "uid-1's record was replaced by uid-2's";
  EXPECT_TRUE(applied.PodGroupApplied("ns/job", "uid-2", json{{"spec", {{"minMember", 4}}}}));
  EXPECT_FALSE(applied.PodGroupApplied("ns/job", "uid-2", json{{"spec", {{"minMember", 8}}}})) << "a changed intent";
  EXPECT_FALSE(applied.OwnedObjectsEnsured("ns/job", "uid-2")) << "only the PodGroup was recorded";
}

TEST(AppliedIntentsTest, AJobThatIsGoneLeavesNothingBehind) {
  AppliedIntents applied;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "ns/job-" + std::to_string(i);
    applied.MarkOwnedObjectsEnsured(key, "uid-" + std::to_string(i));
    applied.Forget(key);
  }
  EXPECT_EQ(applied.size(), 0u);
  applied.Forget("ns/never-seen");
}

}  // namespace
}  // namespace ringmaster::controller
