#include "comm/validate.h"

#include <string>

namespace ringmaster::runtime {

Status CheckBuffers(const void* in, const void* out, size_t count, const char* op) {
  if (count > 0 && (in == nullptr || out == nullptr)) {
    return InvalidArgumentError(std::string(op) + ": null buffer with count " + std::to_string(count));
  }
  return Status::Ok();
}

Status CheckRoot(int root, int size) {
  if (root < 0 || root >= size) {
    return InvalidArgumentError("root " + std::to_string(root) + " is not a rank of a communicator of size " +
                                std::to_string(size));
  }
  return Status::Ok();
}

Status CheckSubset(const std::vector<int>& ranks, int size) {
  if (ranks.empty()) return InvalidArgumentError("a process set needs at least one rank");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size) {
      return InvalidArgumentError("rank " + std::to_string(ranks[i]) + " is outside the world of size " +
                                  std::to_string(size));
    }
    if (i > 0 && ranks[i] <= ranks[i - 1]) return InvalidArgumentError("process set ranks must be sorted and unique");
  }
  return Status::Ok();
}

}  // namespace ringmaster::runtime
