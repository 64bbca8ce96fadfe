#include "gloo/allreduce_algorithm.h"

namespace ringmaster::runtime {

GlooAllreduceAlgorithm ChooseGlooAllreduce(int ranks, size_t bytes) {
  if (ranks == 2 && bytes <= kPairExchangeMaxBytes) return GlooAllreduceAlgorithm::kPairExchange;
  if (ranks < 4) return GlooAllreduceAlgorithm::kRing;
  return bytes / static_cast<size_t>(ranks) <= kBcubeMaxBytesPerRank ? GlooAllreduceAlgorithm::kBcube
                                                                     : GlooAllreduceAlgorithm::kRing;
}

}  // namespace ringmaster::runtime
