// The shrink-or-fresh decision of a rebuild, and the agreement through a real
// store that keeps a mixed world (one rank without the parent) from shrinking.
#include "worker-runtime/elastic/rebuild_plan.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/store/store_client.h"
#include "worker-runtime/store/store_server.h"

namespace ringmaster::elastic {
namespace {

using namespace std::chrono_literals;

api::Membership Record(int64_t generation, std::vector<std::string> pods) {
  api::Membership r;
  r.generation = generation;
  for (size_t i = 0; i < pods.size(); ++i) {
    r.members.push_back({pods[i], "uid-" + pods[i], static_cast<int32_t>(i), "127.0.0.1:1", "node"});
  }
  return r;
}

TEST(RebuildPlanTest, OnlyRemovalsShrinkWithTheGoneRanksExcluded) {
  auto before = Record(3, {"a", "b", "c", "d", "e"});
  auto plan = PlanRebuild(&before, Record(4, {"a", "c", "e"}), true);
  EXPECT_TRUE(plan.shrink) << plan.why;
  EXPECT_EQ(plan.excluded, (std::vector<int>{1, 3}));
  // Rank 0 lost: the survivors still keep their order.
  plan = PlanRebuild(&before, Record(4, {"b", "c", "d", "e"}), true);
  EXPECT_TRUE(plan.shrink);
  EXPECT_EQ(plan.excluded, (std::vector<int>{0}));
}

TEST(RebuildPlanTest, AnythingElseBuildsAfreshAndSaysWhy) {
  auto before = Record(3, {"a", "b", "c"});
  EXPECT_FALSE(PlanRebuild(nullptr, Record(1, {"a"}), true).shrink);
  EXPECT_NE(PlanRebuild(&before, Record(4, {"a", "b"}), false).why.find("cannot shrink"), std::string::npos);
  auto grow = PlanRebuild(&before, Record(4, {"a", "b", "c", "d"}), true);
  EXPECT_FALSE(grow.shrink);
  auto same = PlanRebuild(&before, Record(4, {"a", "b", "c"}), true);  // a rebuild of the same world
  EXPECT_FALSE(same.shrink);
  auto replaced = PlanRebuild(&before, Record(4, {"a", "d"}), true);  // one gone, one new: a join
  EXPECT_FALSE(replaced.shrink);
  EXPECT_NE(replaced.why.find("d is new"), std::string::npos) << replaced.why;
  auto reborn = Record(4, {"a", "b"});
  reborn.members[1].uid = "uid-b-replacement";  // same name, another pod
  EXPECT_FALSE(PlanRebuild(&before, reborn, true).shrink);
  auto reordered = PlanRebuild(&before, Record(4, {"b", "a"}), true);
  EXPECT_FALSE(reordered.shrink);
  EXPECT_NE(reordered.why.find("order"), std::string::npos);
}

TEST(RebuildPlanTest, ProposalsNameTheParentAndTheExcludedRanks) {
  RebuildPlan shrink{true, {1, 3}, ""};
  EXPECT_EQ(ShrinkProposal(shrink, 4097), "shrink 4097 excluding 1 3");
  EXPECT_EQ(ShrinkProposal(RebuildPlan{}, 4097), "fresh");
}

class AgreeOnShrinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreServerOptions so;
    so.secret = "s";
    so.generation = 1;
    auto server = store::StoreServer::Start(so);
    ASSERT_OK(server) << server.status();
    server_ = std::move(server).value();
  }
  // Every rank proposes in its own thread; returns each rank's outcome.
  std::vector<bool> Agree(const std::vector<std::string>& proposals) {
    // One byte per rank: the ranks' threads write their own elements at once, and std::vector<bool> packs
    // its elements into shared words (a data race; ThreadSanitizer saw it).
    std::vector<char> out(proposals.size());
    std::vector<std::thread> ranks;
    for (size_t r = 0; r < proposals.size(); ++r) {
      ranks.emplace_back([&, r] {
        store::StoreClientOptions co;
        co.port = server_->port();
        co.secret = "s";
        co.generation = 1;
        co.rank = static_cast<uint32_t>(r);
        auto client = store::StoreClient::Connect(co);
        ASSERT_OK(client) << client.status();
        auto agreed = AgreeOnShrink(**client, "g2/shrink" + std::to_string(round_), static_cast<int>(r),
                                    static_cast<int>(proposals.size()), proposals[r], 5s);
        ASSERT_OK(agreed) << agreed.status();
        out[r] = *agreed;
      });
    }
    for (auto& t : ranks) t.join();
    ++round_;
    return std::vector<bool>(out.begin(), out.end());
  }
  std::unique_ptr<store::StoreServer> server_;
  int round_ = 0;
};

TEST_F(AgreeOnShrinkTest, AllTheSameShrinkAgreesAnyDifferenceBuildsAfresh) {
  const std::string s = "shrink 1024 excluding 2";
  EXPECT_EQ(Agree({s, s, s}), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(Agree({s, "fresh", s}), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(Agree({s, "shrink 2048 excluding 2", s}), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(Agree({"fresh", "fresh"}), (std::vector<bool>{false, false}));
}

TEST_F(AgreeOnShrinkTest, AMissingRankIsADeadlineNotAHang) {
  store::StoreClientOptions co;
  co.port = server_->port();
  co.secret = "s";
  co.generation = 1;
  auto client = store::StoreClient::Connect(co);
  ASSERT_OK(client);
  auto agreed = AgreeOnShrink(**client, "lonely", 0, 2, "shrink 1 excluding 2", 200ms);
  EXPECT_EQ(agreed.status().code(), StatusCode::kDeadlineExceeded) << agreed.status();
}

}  // namespace
}  // namespace ringmaster::elastic
