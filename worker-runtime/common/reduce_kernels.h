// The host reduction kernels behind ReduceBuffers (dtype.h) for the element
// types the CPU adds natively: out[i] = op(a[i], b[i]) for i < n.
//
// Written with explicit vectors (GCC/Clang vector extensions, 16-byte lanes,
// one 64-byte line per step, loaded and stored with memcpy), because the plain loop does
// not vectorise at -O2: the compiler would have to version it for the
// possible aliasing of out with a or b, which its cheap cost model refuses,
// and the reduction then runs one element per instruction. The results are
// bit-identical to the scalar loop's (each lane applies the same operation).
//
// Buffers may be unaligned; out may be a or b (each block of a and b is read
// before that block of out is written), but no other overlap is allowed.
// kAvg reduces as kSum. Thread-safety: pure functions.
//
// ReduceChain folds m inputs in one pass, in the nested order a chain of ranks
// folds a value (Gloo's ring: each rank applies op(its own, what it received)):
// out = op(in[0], op(in[1], ... op(in[m-2], in[m-1]))). Each line of every
// input is read once and out written once, where m-1 ReduceBuffers calls would
// read and write an accumulator m-1 times; the results are bit-identical to
// those calls' (the same operations on the same operands in the same order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker-runtime/common/dtype.h"

namespace ringmaster::common {

void ReduceFloat32(ReduceOp op, void* out, const void* a, const void* b, size_t n);
void ReduceFloat64(ReduceOp op, void* out, const void* a, const void* b, size_t n);
void ReduceInt32(ReduceOp op, void* out, const void* a, const void* b, size_t n);
void ReduceInt64(ReduceOp op, void* out, const void* a, const void* b, size_t n);
void ReduceUInt8(ReduceOp op, void* out, const void* a, const void* b, size_t n);

// out[i] = op(in[0][i], op(in[1][i], ... op(in[m-2][i], in[m-1][i]))) for i < n, any DataType (16-bit floats
// round after every op, as ReduceBuffers does). m >= 1; out may be any in[j] (the same address), no other
// overlap.
void ReduceChain(DataType type, ReduceOp op, void* out, const void* const* in, size_t m, size_t n);

}  // namespace ringmaster::common
