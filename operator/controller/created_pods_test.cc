#include "operator/controller/created_pods.h"

#include <gtest/gtest.h>

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;
using std::chrono::system_clock;

json Pod(const std::string& name, const std::string& uid) {
  return {{"metadata", {{"name", name}, {"uid", uid}}}, {"status", {{"phase", "Pending"}}}};
}

std::vector<std::string> Names(const std::vector<json>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p["metadata"]["name"]);
  return out;
}

TEST(CreatedPodsTest, CreatesTheCacheLacksAreAddedAsTheApiserverAnsweredThem) {
  CreatedPods created;
  const auto now = system_clock::now();
  created.Created("ns/job", Pod("w-0", "uid-0"), now);
  created.Created("ns/job", Pod("w-1", "uid-1"), now);
  created.Created("ns/other", Pod("o-0", "uid-9"), now);
  std::vector<json> pods = {Pod("w-0", "uid-0")};  // the watch has brought w-0 back, not w-1
  created.Overlay("ns/job", &pods, now);
  EXPECT_EQ(Names(pods), (std::vector<std::string>{"w-0", "w-1"}));
  EXPECT_EQ(pods[1], Pod("w-1", "uid-1"));
  EXPECT_TRUE(created.Pending("ns/job"));
  EXPECT_EQ(created.size(), 2u) << "w-0's record went: the cache holds its uid";
  // The same lagging cache again: overlaid again.
  std::vector<json> again;
  created.Overlay("ns/job", &again, now);
  EXPECT_EQ(Names(again), (std::vector<std::string>{"w-1"}));
}

TEST(CreatedPodsTest, AWatchEventForThePodEndsItsRecordWhateverItsFate) {
  CreatedPods created;
  const auto now = system_clock::now();
  created.Created("ns/job", Pod("w-0", "uid-0"), now);
  // Added and deleted before any reconcile looked: the cache never holds it, the handler saw it.
  created.Seen("ns/job", "uid-0");
  EXPECT_FALSE(created.Pending("ns/job"));
  std::vector<json> pods;
  created.Overlay("ns/job", &pods, now);
  EXPECT_TRUE(pods.empty()) << "a pod the watch saw go is not brought back";
  created.Seen("ns/none", "uid-x");  // an event about a pod nobody waits for
  EXPECT_EQ(created.size(), 0u);
}

TEST(CreatedPodsTest, ACachedPodOfTheSameNameWins) {
  CreatedPods created;
  const auto now = system_clock::now();
  created.Created("ns/job", Pod("w-0", "uid-new"), now);
  std::vector<json> pods = {Pod("w-0", "uid-old")};
  created.Overlay("ns/job", &pods, now);
  ASSERT_EQ(pods.size(), 1u) << "never two pods of one name";
  EXPECT_EQ(pods[0]["metadata"]["uid"], "uid-old");
  EXPECT_TRUE(created.Pending("ns/job")) << "still waiting for uid-new";
}

TEST(CreatedPodsTest, ARecordTheWatchNeverAnswersExpires) {
  CreatedPods created;
  const auto then = system_clock::now();
  created.Created("ns/job", Pod("w-0", "uid-0"), then);
  std::vector<json> pods;
  created.Overlay("ns/job", &pods, then + CreatedPods::kTimeout - std::chrono::seconds(1));
  EXPECT_EQ(pods.size(), 1u);
  pods.clear();
  created.Overlay("ns/job", &pods, then + CreatedPods::kTimeout + std::chrono::seconds(1));
  EXPECT_TRUE(pods.empty());
  EXPECT_FALSE(created.Pending("ns/job"));
}

TEST(CreatedPodsTest, ForgetDropsAJobAndAnAnswerWithoutUidIsNotRecorded) {
  CreatedPods created;
  const auto now = system_clock::now();
  created.Created("ns/job", Pod("w-0", "uid-0"), now);
  created.Created("ns/job", Pod("w-0", "uid-0"), now);  // a repeated record is one
  created.Created("ns/job", {{"metadata", {{"name", "w-1"}}}}, now);
  EXPECT_EQ(created.size(), 1u);
  created.Forget("ns/job");
  EXPECT_EQ(created.size(), 0u);
}

}  // namespace
}  // namespace ringmaster::controller
