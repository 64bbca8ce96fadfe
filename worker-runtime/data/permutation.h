// The per-epoch order of a data set: a seeded Fisher-Yates shuffle of [0, N)
// driven by SplitMix64 (see splitmix64.h). Same (N, seed, epoch) -> same order on
// every rank, every run, every platform: nothing here depends on
// implementation-defined library behaviour (std::shuffle and the std::
// distributions are not specified bit-for-bit).
//
// Memory: 8 bytes per sample (the permutation is materialized).
// Thread-safety: pure function; call from any thread.
#pragma once

#include <cstdint>
#include <vector>

namespace ringmaster::data {

// Returns a permutation of 0..num_samples-1 for `epoch` of a sampler seeded
// with `seed`. num_samples == 0 returns an empty vector.
std::vector<uint64_t> EpochPermutation(uint64_t num_samples, uint64_t seed, uint64_t epoch);

}  // namespace ringmaster::data
