#include "worker-runtime/gloo/allreduce_algorithm.h"

#include <algorithm>

namespace ringmaster::gloo {

StatusOr<AllreducePolicy> ParseAllreducePolicy(std::string_view text) {
  if (text == "exact") return AllreducePolicy::kExact;
  if (text == "bcube") return AllreducePolicy::kBcube;
  return InvalidArgumentError("allreduce algorithm '" + std::string(text) +
                              "' is not one of: exact (default, bit-identical to torch's Gloo), bcube");
}

std::string_view AllreducePolicyName(AllreducePolicy policy) {
  switch (policy) {
    case AllreducePolicy::kExact: return "exact";
    case AllreducePolicy::kBcube: return "bcube";
  }
  return "?";
}

GlooAllreduceAlgorithm ChooseGlooAllreduce(int ranks, size_t bytes, AllreducePolicy policy, bool shared_memory) {
  if (shared_memory) return GlooAllreduceAlgorithm::kSharedMemory;
  if (policy == AllreducePolicy::kBcube && bytes <= kBcubeMaxBytesPerRank * static_cast<size_t>(ranks)) {
    return GlooAllreduceAlgorithm::kBcube;
  }
  if (ranks == 2 && bytes <= kPairExchangeMaxBytes) return GlooAllreduceAlgorithm::kPairExchange;
  return GlooAllreduceAlgorithm::kRing;
}

size_t GlooRingChunkBytes(int ranks, size_t bytes, size_t element_size) {
  // gloo::allreduce's ring, step by step: the segment size is a multiple of the element size, there are at
  // least 2 segments per rank and a multiple of `ranks` of them, and each rank's chunk is as many segments.
  constexpr size_t kMaxSegmentSize = 1024 * 1024;  // AllreduceOptionsImpl::kMaxSegmentSize
  const size_t n = static_cast<size_t>(ranks);
  const size_t max_segment_bytes = element_size * std::max<size_t>(1, kMaxSegmentSize / element_size);
  auto round_up = [](size_t v, size_t m) { return v % m == 0 ? v : v + m - v % m; };
  const size_t segments = round_up(std::max((bytes + max_segment_bytes - 1) / max_segment_bytes, 2 * n), n);
  const size_t segment_bytes = round_up((bytes + segments - 1) / segments, element_size);
  return segment_bytes * (segments / n);
}

}  // namespace ringmaster::gloo
