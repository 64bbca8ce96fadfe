#include "worker-runtime/gloo/allreduce_algorithm.h"

#include <gtest/gtest.h>

namespace ringmaster::gloo {
namespace {

// Never BCube: the ring's order of additions is torch's ProcessGroupGloo's (bit-identical DDP).
TEST(GlooAllreduceAlgorithmTest, PairExchangeForTwoSmallBuffersRingOtherwise) {
  EXPECT_EQ(ChooseGlooAllreduce(2, 4), GlooAllreduceAlgorithm::kPairExchange);
  EXPECT_EQ(ChooseGlooAllreduce(2, kPairExchangeMaxBytes), GlooAllreduceAlgorithm::kPairExchange);
  EXPECT_EQ(ChooseGlooAllreduce(2, kPairExchangeMaxBytes + 4), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(3, 4), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(4, 8), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(8, 4u << 20), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(8, 64u << 20), GlooAllreduceAlgorithm::kRing);
}

}  // namespace
}  // namespace ringmaster::gloo
