#include "worker-runtime/comm/validate.h"

#include <string>

namespace ringmaster::comm {

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

}  // namespace ringmaster::comm

namespace ringmaster::comm {

Status CheckDataType(common::DataType type, const char* op) {
  switch (type) {
    case common::DataType::kFloat32:
    case common::DataType::kFloat64:
    case common::DataType::kFloat16:
    case common::DataType::kBFloat16:
    case common::DataType::kInt32:
    case common::DataType::kInt64:
    case common::DataType::kUInt8: return Status::Ok();
  }
  return InvalidArgumentError(std::string(op) + ": unknown data type " + std::to_string(static_cast<int>(type)));
}

Status CheckReduceOp(common::ReduceOp reduce, const char* op) {
  switch (reduce) {
    case common::ReduceOp::kSum:
    case common::ReduceOp::kAvg:
    case common::ReduceOp::kMin:
    case common::ReduceOp::kMax:
    case common::ReduceOp::kProduct: return Status::Ok();
  }
  return InvalidArgumentError(std::string(op) + ": unknown reduce op " + std::to_string(static_cast<int>(reduce)));
}

StatusOr<size_t> CheckedBytes(size_t count, common::DataType type, size_t blocks, const char* op) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, common::DataTypeSize(type), &bytes) ||
      __builtin_mul_overflow(bytes, blocks, &bytes)) {
    return InvalidArgumentError(std::string(op) + ": " + std::to_string(count) + " elements of " +
                                std::string(common::DataTypeName(type)) + " overflow the address space");
  }
  return bytes;
}

bool Overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

Status CheckAliasing(const void* in, size_t in_bytes, const void* out, size_t out_bytes, size_t in_place_offset,
                     const char* op) {
  if (!Overlaps(in, in_bytes, out, out_bytes)) return Status::Ok();
  if (in == static_cast<const uint8_t*>(out) + in_place_offset) return Status::Ok();
  return InvalidArgumentError(std::string(op) + ": in and out overlap but in is not at out + " +
                              std::to_string(in_place_offset) + " bytes (the in-place form)");
}

}  // namespace ringmaster::comm
