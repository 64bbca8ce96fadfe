#include "worker-runtime/data/elastic_sampler.h"

#include <algorithm>
#include <string>

#include "worker-runtime/data/permutation.h"

namespace ringmaster::data {

StatusOr<ElasticSampler> ElasticSampler::Create(const SamplerOptions& options) {
  if (options.global_batch_size == 0) {
    return InvalidArgumentError("elastic sampler: global_batch_size must be at least 1");
  }
  return ElasticSampler(options);
}

Share ElasticSampler::ShareOf(uint64_t global_size, uint32_t world_size, uint32_t rank) {
  const uint64_t base = global_size / world_size;
  const uint64_t extra = global_size % world_size;
  Share share;
  share.size = base + (rank < extra ? 1 : 0);
  share.begin = rank * base + std::min<uint64_t>(rank, extra);
  return share;
}

StatusOr<SampleCursor> ElasticSampler::Normalize(const SampleCursor& cursor) const {
  const uint64_t n = options_.num_samples;
  if (cursor.committed > n) {
    return InvalidArgumentError("elastic sampler: cursor (" + CursorToString(cursor) + ") is past the end of a " +
                                std::to_string(n) + "-sample epoch; was it saved for another data set?");
  }
  if (n > 0 && cursor.committed == n) return SampleCursor{cursor.epoch + 1, 0};
  return cursor;
}

StatusOr<SampleCursor> ElasticSampler::Advance(const SampleCursor& cursor) const {
  RINGMASTER_ASSIGN_OR_RETURN(const SampleCursor at, Normalize(cursor));
  const uint64_t n = options_.num_samples;
  const uint64_t take = std::min(options_.global_batch_size, n - at.committed);
  if (at.committed + take == n) return SampleCursor{at.epoch + 1, 0};
  return SampleCursor{at.epoch, at.committed + take};
}

const std::vector<uint64_t>& ElasticSampler::PermutationOf(uint64_t epoch) {
  if (!cached_ || cached_epoch_ != epoch) {
    cached_order_ = EpochPermutation(options_.num_samples, options_.seed, epoch);
    cached_epoch_ = epoch;
    cached_ = true;
  }
  return cached_order_;
}

StatusOr<StepPlan> ElasticSampler::Plan(const SampleCursor& cursor, uint32_t world_size, uint32_t rank) {
  if (world_size == 0) return InvalidArgumentError("elastic sampler: world_size must be at least 1");
  if (rank >= world_size) {
    return InvalidArgumentError("elastic sampler: rank " + std::to_string(rank) + " is not below world_size " +
                                std::to_string(world_size));
  }
  RINGMASTER_ASSIGN_OR_RETURN(const SampleCursor at, Normalize(cursor));
  RINGMASTER_ASSIGN_OR_RETURN(const SampleCursor next, Advance(at));
  const uint64_t n = options_.num_samples;

  StepPlan plan;
  plan.epoch = at.epoch;
  plan.global_begin = at.committed;
  plan.global_size = std::min(options_.global_batch_size, n - at.committed);
  plan.share = ShareOf(plan.global_size, world_size, rank);
  plan.ends_epoch = next.epoch != at.epoch;
  plan.next = next;
  if (plan.share.size > 0) {
    const std::vector<uint64_t>& order = PermutationOf(at.epoch);
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(plan.global_begin + plan.share.begin);
    plan.indices.assign(first, first + static_cast<std::ptrdiff_t>(plan.share.size));
  }
  return plan;
}

}  // namespace ringmaster::data
