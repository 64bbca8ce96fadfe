#include "worker-runtime/fusion/fusion_planner.h"

#include <cstring>

namespace ringmaster::fusion {

size_t Batch::bytes() const {
  size_t n = 0;
  for (const Request* r : requests) n += r->bytes();
  return n;
}

std::vector<Batch> PlanBatches(const std::vector<Request*>& ordered, size_t threshold_bytes) {
  std::vector<Batch> batches;
  size_t open_bytes = 0;
  bool open = false;  // the last batch accepts more allreduces
  for (Request* r : ordered) {
    bool fusable = r->kind == CollectiveKind::kAllreduce && threshold_bytes > 0 && r->bytes() <= threshold_bytes;
    if (fusable && open) {
      const Request* head = batches.back().requests.front();
      if (head->type == r->type && head->op == r->op && head->host == r->host &&
          open_bytes + r->bytes() <= threshold_bytes) {
        batches.back().requests.push_back(r);
        open_bytes += r->bytes();
        continue;
      }
    }
    batches.push_back(Batch{{r}});
    open = fusable;
    open_bytes = r->bytes();
  }
  return batches;
}

void PackBatch(const Batch& batch, std::vector<uint8_t>& buffer) {
  size_t offset = 0;
  if (buffer.size() < batch.bytes()) buffer.resize(batch.bytes());
  for (const Request* r : batch.requests) {
    if (r->bytes() > 0) std::memcpy(buffer.data() + offset, r->in, r->bytes());
    offset += r->bytes();
  }
}

void UnpackBatch(const Batch& batch, const std::vector<uint8_t>& buffer) {
  size_t offset = 0;
  for (const Request* r : batch.requests) {
    if (r->bytes() > 0) std::memcpy(r->out, buffer.data() + offset, r->bytes());
    offset += r->bytes();
  }
}

}  // namespace ringmaster::fusion
