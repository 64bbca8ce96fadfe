// Which of Gloo's allreduce algorithms the CPU backend runs for a given world
// size and buffer.
//
// Gloo's ring (torch's ProcessGroupGloo always runs it) pipelines segments of
// up to 1 MiB around the ring: bandwidth-optimal, but 2 x (at least 2n)
// dependent steps, each of which waits for a neighbour to be scheduled. With
// little data per rank that latency is the whole cost, and more so on a loaded
// machine. BCube (recursive halving, then doubling) sends the same bytes in
// 2 x log2(n) steps, without the ring's pipelining, which loses once each rank's
// share is large. Measured with ringmaster-perf on a 2-core machine: BCube is
// 2-3x faster at 1 MiB for 4 and 8 ranks, even at 512 KiB per rank, slower from
// 2 MiB per rank. It is not used: it adds the ranks' values in another order
// than the ring, so DDP over our backend would no longer be bit-identical to
// DDP over torch's Gloo (unit.python.ddp at 4 ranks failed with it). Two ranks
// with little data: the ring still takes 2 x 4
// dependent steps where one exchange does (each rank sends its buffer to the
// other, which adds it: the same bytes as the ring sends); that helps up to
// 1 MiB, while at 4 MiB the unpipelined exchange was 2-3x slower than the ring.
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>

namespace ringmaster::gloo {

enum class GlooAllreduceAlgorithm {
  kRing,
  kPairExchange,  // 2 ranks: swap whole buffers, then each adds (rank 0's, rank 1's) in that order
};

// Largest buffer that two ranks exchange whole.
inline constexpr size_t kPairExchangeMaxBytes = 1024 * 1024;

// The algorithm for `bytes` reduced over `ranks` ranks (ranks >= 1).
GlooAllreduceAlgorithm ChooseGlooAllreduce(int ranks, size_t bytes);

}  // namespace ringmaster::gloo
