// Argument checks of the Communicator's public methods (communicator.cc), in
// one place so that every backend refuses the same inputs the same way; also
// used by the Runtime for process-set ranks.
//
// Every check returns InvalidArgument naming the operation and what is wrong.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"
#include "worker-runtime/common/dtype.h"

namespace ringmaster::comm {

// Errors: InvalidArgument when a pointer is null while count > 0.
Status CheckBuffers(const void* in, const void* out, size_t count, const char* op);
// Errors: InvalidArgument when root is outside [0, size).
Status CheckRoot(int root, int size);
// Errors: InvalidArgument unless ranks is sorted, unique and within [0, size).
Status CheckSubset(const std::vector<int>& ranks, int size);
// Errors: InvalidArgument unless `type` is one of the DataType values.
Status CheckDataType(common::DataType type, const char* op);
// Errors: InvalidArgument unless `reduce` is one of the ReduceOp values.
Status CheckReduceOp(common::ReduceOp reduce, const char* op);
// count * DataTypeSize(type) * blocks. Errors: InvalidArgument when it overflows size_t.
StatusOr<size_t> CheckedBytes(size_t count, common::DataType type, size_t blocks, const char* op);
// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool Overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes);
// Errors: InvalidArgument when the ranges overlap and in != out + in_place_offset
// (the collective's one in-place form).
Status CheckAliasing(const void* in, size_t in_bytes, const void* out, size_t out_bytes, size_t in_place_offset,
                     const char* op);

}  // namespace ringmaster::comm
