// NCCL's data types and reduction operators on the host, as NCCL's device reduction functions
// (src/device/reduce_kernel.h) compute them: integers wrap, fp16/bf16/fp8 values are reduced in float
// and rounded back (round to nearest even; fp8 saturating, as the __nv_fp8 conversions), ncclAvg is
// a sum of inputs pre-multiplied by 1/nranks for floating types and a sum divided by nranks for
// integers (enqueue.cc: ncclDevPreMulSum / ncclDevSumPostDiv).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tests/gpu_emulation/api_headers.h"

namespace gpuemu {

// The size of one element; 0 for a type this emulation does not know (a newer header's).
size_t TypeSize(ncclDataType_t type);

// Folds one rank's contribution into the accumulator: acc = in (first) or acc = op(acc, in), with
// the avg pre-multiplication for floating types; FinishAvg divides integer sums. Contributions must
// be folded in rank order 0..n-1 for every rank to get the same bits.
void Fold(void* acc, const void* in, size_t count, ncclDataType_t type, ncclRedOp_t op, int nranks, bool first);
void FinishAvg(void* acc, size_t count, ncclDataType_t type, int nranks);

// Conversions, exposed for the tests.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);

}  // namespace gpuemu
