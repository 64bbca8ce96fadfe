// Deterministic per-rank inputs whose reductions are exact in
// every data type (small integers), and the reference results they must give.
#pragma once

#include <cstdint>
#include <vector>

#include "worker-runtime/common/dtype.h"

namespace ringmaster::common {

// Value of element i on `rank` for a test of `op` (exact in every dtype).
double InputValue(ReduceOp op, int rank, size_t i);

// A buffer of `count` elements of `type` filled with InputValue(op, rank, i + offset).
std::vector<uint8_t> MakeInput(DataType type, ReduceOp op, int rank, size_t count, size_t offset = 0);

// The reduction over ranks [0, size) of MakeInput(type, op, r, count, offset),
// averaged like the backends do (FinishAverage) for kAvg.
std::vector<uint8_t> ReferenceReduce(DataType type, ReduceOp op, int size, size_t count, size_t offset = 0);

// Number of elements of `type` that differ between a and b (as values; NaN != NaN).
size_t CountMismatches(DataType type, const void* a, const void* b, size_t count);

}  // namespace ringmaster::common
