// Groups an agreed, ordered list of requests into batches: consecutive
// allreduces of the same type and op are fused while their total stays within
// the threshold; everything else runs alone. The plan depends only on the
// requests' agreed fields, so every rank computes the same plan.
#pragma once

#include <cstddef>
#include <vector>

#include "worker-runtime/fusion/request.h"

namespace ringmaster::fusion {

struct Batch {
  std::vector<Request*> requests;  // in submission order
  bool fused() const { return requests.size() > 1; }
  size_t bytes() const;
};

// threshold_bytes == 0 disables fusion.
std::vector<Batch> PlanBatches(const std::vector<Request*>& ordered, size_t threshold_bytes);

// Copies every request's input into consecutive slices of buffer (which holds
// at least batch.bytes()), and back out to each request's output.
void PackBatch(const Batch& batch, std::vector<uint8_t>& buffer);
void UnpackBatch(const Batch& batch, const std::vector<uint8_t>& buffer);

}  // namespace ringmaster::fusion
