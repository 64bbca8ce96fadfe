#include "worker-runtime/gloo/allreduce_algorithm.h"

namespace ringmaster::gloo {

GlooAllreduceAlgorithm ChooseGlooAllreduce(int ranks, size_t bytes) {
  if (ranks == 2 && bytes <= kPairExchangeMaxBytes) return GlooAllreduceAlgorithm::kPairExchange;
  return GlooAllreduceAlgorithm::kRing;
}

}  // namespace ringmaster::gloo
