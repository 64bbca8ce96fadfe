// ElasticSampler: exactly-once sampling across membership changes.
//
// The arithmetic never depends on the world size. Each epoch has a fixed
// permutation of [0, N) (permutation.h). A step's *global* batch is the next B
// positions of that permutation after the cursor (fewer at the end of an epoch:
// no padding, no repeats, no wrap-around). The world size W only decides how
// that global batch is cut into contiguous shares: rank r gets
//   size(r)  = B/W + (r < B%W ? 1 : 0)
//   begin(r) = r*(B/W) + min(r, B%W)
// so shares differ by at most one and ranks >= B get nothing when B < W.
//
// Consequences (the properties the tests check):
//  * the union of all ranks' shares is the global batch, each sample once;
//  * committing a step advances the cursor by the global batch size; a world
//    size change at any committed cursor re-strides the rest of the epoch over
//    the new world, nothing lost, nothing repeated;
//  * restoring an earlier cursor re-yields exactly the samples after it.
// Horovod's ElasticSampler pads (repeats samples); torchft's sampler is lossy.
//
// Thread-safety: thread-compatible. Plan() caches the current epoch's
// permutation, so one object must not be used from two threads at once.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "worker-runtime/data/sample_cursor.h"

namespace ringmaster::data {

struct SamplerOptions {
  uint64_t num_samples = 0;        // N; 0 is allowed (every epoch is one empty step)
  uint64_t global_batch_size = 0;  // B >= 1, fixed for the whole job
  uint64_t seed = 0;
};

// The part of a global batch one rank processes: positions [begin, begin+size)
// within the batch.
struct Share {
  uint64_t begin = 0;
  uint64_t size = 0;
};

// What one rank does in the next step, and where the cursor goes when that
// step is committed.
struct StepPlan {
  uint64_t epoch = 0;             // the epoch this batch belongs to
  uint64_t global_begin = 0;      // position of the batch's first sample in the epoch permutation
  uint64_t global_size = 0;       // samples in the global batch: min(B, N - global_begin); 0 iff N == 0
  Share share;                    // this rank's part of the global batch
  std::vector<uint64_t> indices;  // this rank's sample ids, share.size of them
  bool ends_epoch = false;        // committing this step finishes the epoch
  SampleCursor next;              // the cursor after committing this step
};

class ElasticSampler {
 public:
  // Errors: InvalidArgument when global_batch_size == 0.
  static StatusOr<ElasticSampler> Create(const SamplerOptions& options);

  // This rank's part of the step after `cursor`. A cursor with committed == N
  // is read as the start of the next epoch.
  // Errors: InvalidArgument when world_size == 0, rank >= world_size, or
  // cursor.committed > N (the cursor belongs to a different data set).
  StatusOr<StepPlan> Plan(const SampleCursor& cursor, uint32_t world_size, uint32_t rank);

  // The cursor after committing the step that follows `cursor` (the same as
  // Plan(...).next, for any world size). Errors: as Plan's cursor check.
  StatusOr<SampleCursor> Advance(const SampleCursor& cursor) const;

  // The share rule described at the top of this file. Requires world_size >= 1.
  static Share ShareOf(uint64_t global_size, uint32_t world_size, uint32_t rank);

  const SamplerOptions& options() const { return options_; }

 private:
  explicit ElasticSampler(const SamplerOptions& options) : options_(options) {}

  // Normalizes committed == N (N > 0) to the next epoch's start; checks bounds.
  StatusOr<SampleCursor> Normalize(const SampleCursor& cursor) const;
  const std::vector<uint64_t>& PermutationOf(uint64_t epoch);

  // Constant after construction.
  SamplerOptions options_;

  // Cache of the last epoch's permutation (see thread-safety note).
  bool cached_ = false;
  uint64_t cached_epoch_ = 0;
  std::vector<uint64_t> cached_order_;
};

}  // namespace ringmaster::data
