#include "worker-runtime/gloo/allreduce_algorithm.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::gloo {
namespace {

// By default never BCube: the ring's order of additions is torch's ProcessGroupGloo's (bit-identical DDP).
TEST(GlooAllreduceAlgorithmTest, PairExchangeForTwoSmallBuffersRingOtherwise) {
  EXPECT_EQ(ChooseGlooAllreduce(2, 4), GlooAllreduceAlgorithm::kPairExchange);
  EXPECT_EQ(ChooseGlooAllreduce(2, kPairExchangeMaxBytes), GlooAllreduceAlgorithm::kPairExchange);
  EXPECT_EQ(ChooseGlooAllreduce(2, kPairExchangeMaxBytes + 4), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(3, 4), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(4, 8), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(8, 4u << 20), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(8, 64u << 20), GlooAllreduceAlgorithm::kRing);
}

// Shared memory whenever it is set up (faster than any TCP algorithm); BCube only when asked for, over TCP,
// up to 1 MiB per rank (where it beats the ring).
TEST(GlooAllreduceAlgorithmTest, SharedMemoryWhenSetUpBcubeOnlyWhenAskedFor) {
  for (AllreducePolicy p : {AllreducePolicy::kExact, AllreducePolicy::kBcube}) {
    EXPECT_EQ(ChooseGlooAllreduce(2, 4, p, true), GlooAllreduceAlgorithm::kSharedMemory);
    EXPECT_EQ(ChooseGlooAllreduce(8, 64u << 20, p, true), GlooAllreduceAlgorithm::kSharedMemory);
  }
  EXPECT_EQ(ChooseGlooAllreduce(4, 1u << 20, AllreducePolicy::kBcube, false), GlooAllreduceAlgorithm::kBcube);
  EXPECT_EQ(ChooseGlooAllreduce(8, 8u << 20, AllreducePolicy::kBcube, false), GlooAllreduceAlgorithm::kBcube);
  EXPECT_EQ(ChooseGlooAllreduce(8, (8u << 20) + 4, AllreducePolicy::kBcube, false), GlooAllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseGlooAllreduce(2, 4, AllreducePolicy::kBcube, false), GlooAllreduceAlgorithm::kBcube);
  EXPECT_EQ(ChooseGlooAllreduce(4, 1u << 20, AllreducePolicy::kExact, false), GlooAllreduceAlgorithm::kRing);
}

TEST(GlooAllreduceAlgorithmTest, PolicyNamesRoundTripAndBadNamesAreRefused) {
  for (AllreducePolicy p : {AllreducePolicy::kExact, AllreducePolicy::kBcube}) {
    auto parsed = ParseAllreducePolicy(AllreducePolicyName(p));
    ASSERT_OK(parsed);
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParseAllreducePolicy("ring");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bcube"), std::string::npos) << bad.status();
}

// gloo::allreduce's layout, worked by hand: segments of at most 1 MiB, >= 2 per rank, a multiple of the ranks.
TEST(GlooAllreduceAlgorithmTest, RingChunksFollowGloosSegments) {
  // 4 ranks, 4 KiB of float: 8 segments of 512 B, 2 per rank: chunks of 1 KiB.
  EXPECT_EQ(GlooRingChunkBytes(4, 4096, 4), 1024u);
  // 3 ranks, 13 floats (52 B): 6 segments of ceil(52/6)=9 -> 12 B (rounded up to the element), 2 per rank.
  EXPECT_EQ(GlooRingChunkBytes(3, 52, 4), 24u);
  // 2 ranks, 1 element: 4 segments of 4 B; chunk 0 holds it.
  EXPECT_EQ(GlooRingChunkBytes(2, 4, 4), 8u);
  // 8 ranks, 64 MiB: 64 segments of 1 MiB, 8 per rank.
  EXPECT_EQ(GlooRingChunkBytes(8, 64u << 20, 4), 8u << 20);
  // 3 ranks, 10 MiB: 10 segments -> 12, of ceil(10 MiB / 12) rounded to 4 B; 4 per rank.
  EXPECT_EQ(GlooRingChunkBytes(3, 10u << 20, 4), 4 * (((10u << 20) / 12 + 1 + 3) / 4 * 4));
}

}  // namespace
}  // namespace ringmaster::gloo
