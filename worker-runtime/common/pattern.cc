#include "worker-runtime/common/pattern.h"

#include <algorithm>

namespace ringmaster::common {

double InputValue(ReduceOp op, int rank, size_t i) {
  switch (op) {
    case ReduceOp::kProduct: return 1.0 + static_cast<double>((i + static_cast<size_t>(rank)) % 2);
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<double>((i * 7 + static_cast<size_t>(rank) * 3) % 11);
    default: return static_cast<double>(rank + 1) + static_cast<double>(i % 5);
  }
}

std::vector<uint8_t> MakeInput(DataType type, ReduceOp op, int rank, size_t count, size_t offset) {
  std::vector<uint8_t> buf(count * DataTypeSize(type));
  for (size_t i = 0; i < count; ++i) StoreFromDouble(type, buf.data(), i, InputValue(op, rank, i + offset));
  return buf;
}

std::vector<uint8_t> ReferenceReduce(DataType type, ReduceOp op, int size, size_t count, size_t offset) {
  std::vector<uint8_t> out(count * DataTypeSize(type));
  for (size_t i = 0; i < count; ++i) {
    double acc = InputValue(op, 0, i + offset);
    for (int r = 1; r < size; ++r) {
      double v = InputValue(op, r, i + offset);
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg: acc += v; break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
        case ReduceOp::kMax: acc = std::max(acc, v); break;
        case ReduceOp::kProduct: acc *= v; break;
      }
    }
    StoreFromDouble(type, out.data(), i, acc);
  }
  if (op == ReduceOp::kAvg) FinishAverage(type, out.data(), count, size);
  return out;
}

size_t CountMismatches(DataType type, const void* a, const void* b, size_t count) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += LoadAsDouble(type, a, i) != LoadAsDouble(type, b, i);
  return bad;
}

}  // namespace ringmaster::common
