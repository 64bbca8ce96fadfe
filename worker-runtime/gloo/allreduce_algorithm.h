// Which allreduce the CPU backend runs for a given world size and buffer, the
// option that lets a user trade bit-identity for speed, and the layout of
// Gloo's ring (which rank's value is added in which order).
//
// Gloo's ring (torch's ProcessGroupGloo always runs it) pipelines segments of
// up to 1 MiB around the ring: bandwidth-optimal, but 2 x (at least 2n)
// dependent steps, each of which waits for a neighbour to be scheduled. With
// little data per rank that latency is the whole cost, and more so on a loaded
// machine. BCube (recursive halving, then doubling) sends the same bytes in
// 2 x log2(n) steps, without the ring's pipelining, which loses once each rank's
// share is large. Measured with ringmaster-perf on a 2-core machine over TCP:
// BCube is 2-3x faster at 1 MiB for 4 and 8 ranks, even at 512 KiB per rank,
// slower from 2 MiB per rank (8 ranks: 2.7x at 1 MiB, 1.3x at 4 MiB, 0.9x at
// 16 MiB). It adds the ranks' values in another order than the ring, so DDP
// over our backend would no longer be bit-identical to DDP over torch's Gloo
// (unit.python.ddp at 4 ranks failed with it): it runs only when the user opts
// in (AllreducePolicy::kBcube; RINGMASTER_ALLREDUCE_ALGORITHM=bcube), and only
// where it wins: between ranks that cannot share memory, up to
// kBcubeMaxBytesPerRank per rank.
// Two ranks with little data: the ring still takes 2 x 4 dependent steps where
// one exchange does (each rank sends its buffer to the other, which adds it: the
// same bytes as the ring sends); that helps up to 1 MiB, while at 4 MiB the
// unpipelined exchange was 2-3x slower than the ring.
//
// Ranks that share a host (all of them: shm_allreduce.h) skip TCP: they add in
// shared memory, in exactly the ring's order (GlooRingChunkBytes below), so the
// default stays bit-identical to torch's Gloo while no byte crosses a socket.
// That is 4-25x faster than the TCP ring and than BCube over TCP at every size
// measured (2-8 ranks, 1-256 MiB), so it runs under either policy.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::gloo {

// What a user asks for (GlooOptions::allreduce).
enum class AllreducePolicy {
  kExact,  // default: every result bit-identical to torch's ProcessGroupGloo (Gloo's ring order of additions)
  kBcube,  // opt-in: Gloo's BCube (recursive halving-doubling) over TCP where it beats the ring; sums in
           // another order, so results may differ from torch's Gloo in the last bits (every rank still gets
           // the same result). Ranks on one host use shared memory under both policies.
};

// "exact" | "bcube". Errors: InvalidArgument naming the accepted values.
StatusOr<AllreducePolicy> ParseAllreducePolicy(std::string_view text);
std::string_view AllreducePolicyName(AllreducePolicy policy);

enum class GlooAllreduceAlgorithm {
  kRing,
  kPairExchange,  // 2 ranks: swap whole buffers, then each adds (rank 0's, rank 1's) in that order
  kSharedMemory,  // same host: the ring's order of additions, through shared memory (shm_allreduce.h)
  kBcube,         // the opt-in
};

// Largest buffer that two ranks exchange whole.
inline constexpr size_t kPairExchangeMaxBytes = 1024 * 1024;

// The smallest allreduce that sets up the shared-memory path (a collective step through the store: every rank
// reads every rank's key, n^2 requests, 40-60 ms at 32 ranks). Smaller ones run over TCP until then, so the
// tiny allreduces a rebuild runs (the engine's negotiation, the restore) never pay for it; the first gradient
// bucket does, once, and every allreduce after it uses shared memory. The same on every rank for a given
// collective (count and type are), so every rank sets up at the same call.
inline constexpr size_t kSharedMemorySetupMinBytes = 64 * 1024;
// The opt-in runs BCube up to this many bytes per rank (buffer / ranks), the ring above.
inline constexpr size_t kBcubeMaxBytesPerRank = 1024 * 1024;

// The algorithm for `bytes` reduced over `ranks` ranks (ranks >= 2). `shared_memory`: every rank of the
// communicator maps every other's segment.
GlooAllreduceAlgorithm ChooseGlooAllreduce(int ranks, size_t bytes, AllreducePolicy policy = AllreducePolicy::kExact,
                                           bool shared_memory = false);

// Gloo's ring (gloo/allreduce.cc, as torch runs it: one input, segments of at most 1 MiB) splits the buffer
// into `ranks` chunks of this many bytes (the last ones may be short or empty). Chunk c's result is
//   x[c] op (x[c+1] op (... op (x[c-2] op x[c-1])))      (rank indices mod ranks)
// -- the value starts at rank c-1 and each rank folds in its own on the left as it passes to rank-1.
// ranks >= 2, element_size > 0.
size_t GlooRingChunkBytes(int ranks, size_t bytes, size_t element_size);

}  // namespace ringmaster::gloo
