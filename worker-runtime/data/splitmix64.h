// SplitMix64: a tiny, fully specified 64-bit PRNG (Steele, Lea, Flood 2014; the
// seeding generator of xoshiro). Its output sequence is fixed by the algorithm,
// not by a standard library, so the same seed gives the same numbers with any
// compiler, on any platform, forever -- which the elastic sampler relies on.
//
// Thread-safety: a SplitMix64 object is a value; one object per thread.
#pragma once

#include <cstdint>

namespace ringmaster::data {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) without modulo bias (rejection of the low
  // 2^64 mod bound values). bound == 0 returns 0.
  uint64_t Below(uint64_t bound) {
    if (bound == 0) return 0;
    const uint64_t threshold = (0 - bound) % bound;  // == 2^64 mod bound
    for (;;) {
      const uint64_t r = Next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  uint64_t state_;
};

// Mixes two words into one seed (one SplitMix64 finalizer round over each), so
// (seed, epoch) pairs that differ in any bit give unrelated streams.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  SplitMix64 g(a);
  const uint64_t x = g.Next();
  SplitMix64 h(x ^ (b * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL));
  return h.Next();
}

}  // namespace ringmaster::data
