#include "worker-runtime/tools/run/chaos_spec.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::run {
namespace {

TEST(ChaosSpecTest, KillcollNamesItsRank) {
  auto events = ParseChaos("killcoll@5:1,kill@7:0");
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].action, "killcoll");
  EXPECT_EQ((*events)[0].step, 5);
  EXPECT_EQ((*events)[0].arg, 1);
  EXPECT_FALSE((*events)[0].any_rank);
  EXPECT_EQ((*events)[1].action, "kill");
}

// killcolls@S:N is N killcoll events of ranks drawn as they fire, every kKillCollsEverySteps steps from S.
TEST(ChaosSpecTest, KillcollsExpandsToSpreadKillcollsOfDrawnRanks) {
  auto events = ParseChaos("killcolls@3:20");
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 20u);
  for (size_t k = 0; k < events->size(); ++k) {
    EXPECT_EQ((*events)[k].action, "killcoll");
    EXPECT_TRUE((*events)[k].any_rank);
    EXPECT_EQ((*events)[k].step, 3 + kKillCollsEverySteps * static_cast<int64_t>(k));
  }
}

TEST(ChaosSpecTest, RandomStillExpandsEveryFourSteps) {
  auto events = ParseChaos("random@4:3");
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[2].step, 4 + 2 * kRandomEverySteps);
  EXPECT_FALSE((*events)[2].any_rank);
}

TEST(ChaosSpecTest, BadItemsAreNamed) {
  EXPECT_EQ(ParseChaos("killcol@5:1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseChaos("killcoll@x:1").status().code(), StatusCode::kInvalidArgument);
  auto huge = ParseChaos("killcolls@1:2000000000");
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("killcolls@1:2000000000"), std::string::npos) << huge.status();
}

}  // namespace
}  // namespace ringmaster::run
