#include "worker-runtime/data/permutation.h"

#include <numeric>
#include <utility>

#include "worker-runtime/data/splitmix64.h"

namespace ringmaster::data {

std::vector<uint64_t> EpochPermutation(uint64_t num_samples, uint64_t seed, uint64_t epoch) {
  std::vector<uint64_t> order(num_samples);
  std::iota(order.begin(), order.end(), uint64_t{0});
  SplitMix64 rng(MixSeed(seed, epoch));
  // Durstenfeld's Fisher-Yates: position i takes a uniform pick of [0, i].
  for (uint64_t i = num_samples; i > 1; --i) {
    const uint64_t j = rng.Below(i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace ringmaster::data
