#include "worker-runtime/common/reduce_kernels.h"

#include <cstring>

namespace ringmaster::common {
namespace {

constexpr size_t kVectorBytes = 16;  // one SSE2 / NEON register: every x86-64 and arm64 has it
constexpr size_t kUnroll = 4;        // vectors per step (written out below): one 64-byte cache line

// One op over whole cache lines with vector types, then the tail element by element.
// Op is a function object that takes and returns both vectors and scalars. Integer lanes wrap as the
// scalar casts do (uint8: modulo 256).
template <typename T, typename Op>
void Elementwise(Op op, void* out, const void* a, const void* b, size_t n) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  constexpr size_t kLanes = kVectorBytes / sizeof(T);
  constexpr size_t kStep = kLanes * kUnroll;
  auto* o = static_cast<unsigned char*>(out);
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  size_t i = 0;
  auto load = [](const unsigned char* p) {
    Vec v;
    std::memcpy(&v, p, kVectorBytes);
    return v;
  };
  for (; i + kStep <= n; i += kStep) {
    const unsigned char* xi = x + i * sizeof(T);
    const unsigned char* yi = y + i * sizeof(T);
    // The whole line of a and b is read before any of out is written (out may be a or b).
    Vec r0 = op(load(xi), load(yi));
    Vec r1 = op(load(xi + kVectorBytes), load(yi + kVectorBytes));
    Vec r2 = op(load(xi + 2 * kVectorBytes), load(yi + 2 * kVectorBytes));
    Vec r3 = op(load(xi + 3 * kVectorBytes), load(yi + 3 * kVectorBytes));
    unsigned char* oi = o + i * sizeof(T);
    std::memcpy(oi, &r0, kVectorBytes);
    std::memcpy(oi + kVectorBytes, &r1, kVectorBytes);
    std::memcpy(oi + 2 * kVectorBytes, &r2, kVectorBytes);
    std::memcpy(oi + 3 * kVectorBytes, &r3, kVectorBytes);
  }
  for (; i < n; ++i) {
    T va, vb;
    std::memcpy(&va, x + i * sizeof(T), sizeof(T));
    std::memcpy(&vb, y + i * sizeof(T), sizeof(T));
    T r = op(va, vb);
    std::memcpy(o + i * sizeof(T), &r, sizeof(T));
  }
}

struct Add {
  template <typename V>
  V operator()(V a, V b) const {
    return a + b;
  }
};
struct Mul {
  template <typename V>
  V operator()(V a, V b) const {
    return a * b;
  }
};
// Min and max as the scalar Combine defines them (b < a ? b : a), lane by lane, so NaNs land the same way.
struct Min {
  template <typename V>
  V operator()(V a, V b) const {
    return b < a ? b : a;
  }
};
struct Max {
  template <typename V>
  V operator()(V a, V b) const {
    return a < b ? b : a;
  }
};

// ReduceChain for a native type: per 64-byte line, the last input into registers, then op(in[j], acc) for
// j = m-2 .. 0, then one store (every input's line is read before out's is written: out may be an input).
template <typename T, typename Op>
void Chain(Op op, void* out, const void* const* in, size_t m, size_t n) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  constexpr size_t kLanes = kVectorBytes / sizeof(T);
  constexpr size_t kStep = kLanes * kUnroll;
  auto* o = static_cast<unsigned char*>(out);
  auto load = [](const void* base, size_t byte) {
    Vec v;
    std::memcpy(&v, static_cast<const unsigned char*>(base) + byte, kVectorBytes);
    return v;
  };
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    const size_t at = i * sizeof(T);
    Vec r0 = load(in[m - 1], at), r1 = load(in[m - 1], at + kVectorBytes);
    Vec r2 = load(in[m - 1], at + 2 * kVectorBytes), r3 = load(in[m - 1], at + 3 * kVectorBytes);
    for (size_t j = m - 1; j-- > 0;) {
      r0 = op(load(in[j], at), r0);
      r1 = op(load(in[j], at + kVectorBytes), r1);
      r2 = op(load(in[j], at + 2 * kVectorBytes), r2);
      r3 = op(load(in[j], at + 3 * kVectorBytes), r3);
    }
    std::memcpy(o + at, &r0, kVectorBytes);
    std::memcpy(o + at + kVectorBytes, &r1, kVectorBytes);
    std::memcpy(o + at + 2 * kVectorBytes, &r2, kVectorBytes);
    std::memcpy(o + at + 3 * kVectorBytes, &r3, kVectorBytes);
  }
  for (; i < n; ++i) {
    T r;
    std::memcpy(&r, static_cast<const unsigned char*>(in[m - 1]) + i * sizeof(T), sizeof(T));
    for (size_t j = m - 1; j-- > 0;) {
      T v;
      std::memcpy(&v, static_cast<const unsigned char*>(in[j]) + i * sizeof(T), sizeof(T));
      r = op(v, r);
    }
    std::memcpy(o + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T>
void ChainTyped(ReduceOp op, void* out, const void* const* in, size_t m, size_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return Chain<T>(Add{}, out, in, m, n);
    case ReduceOp::kProduct: return Chain<T>(Mul{}, out, in, m, n);
    case ReduceOp::kMin: return Chain<T>(Min{}, out, in, m, n);
    case ReduceOp::kMax: return Chain<T>(Max{}, out, in, m, n);
  }
}

// Any other type: ReduceBuffers block by block through an accumulator on the stack (out may be an input
// that a later step still reads, so it is written only by the last step).
void ChainByPairs(DataType type, ReduceOp op, void* out, const void* const* in, size_t m, size_t n) {
  constexpr size_t kBlockBytes = 4096;
  const size_t esize = DataTypeSize(type);
  const size_t block = kBlockBytes / esize;
  alignas(64) unsigned char acc[kBlockBytes];
  for (size_t i = 0; i < n; i += block) {
    const size_t k = n - i < block ? n - i : block;
    const size_t at = i * esize;
    auto at_in = [&](size_t j) { return static_cast<const unsigned char*>(in[j]) + at; };
    std::memcpy(acc, at_in(m - 1), k * esize);
    for (size_t j = m - 1; j-- > 1;) ReduceBuffers(type, op, acc, at_in(j), acc, k);
    ReduceBuffers(type, op, static_cast<unsigned char*>(out) + at, at_in(0), acc, k);
  }
}

template <typename T>
void Reduce(ReduceOp op, void* out, const void* a, const void* b, size_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return Elementwise<T>(Add{}, out, a, b, n);
    case ReduceOp::kProduct: return Elementwise<T>(Mul{}, out, a, b, n);
    case ReduceOp::kMin: return Elementwise<T>(Min{}, out, a, b, n);
    case ReduceOp::kMax: return Elementwise<T>(Max{}, out, a, b, n);
  }
}

}  // namespace

void ReduceFloat32(ReduceOp op, void* out, const void* a, const void* b, size_t n) { Reduce<float>(op, out, a, b, n); }
void ReduceFloat64(ReduceOp op, void* out, const void* a, const void* b, size_t n) { Reduce<double>(op, out, a, b, n); }
void ReduceInt32(ReduceOp op, void* out, const void* a, const void* b, size_t n) { Reduce<int32_t>(op, out, a, b, n); }
void ReduceInt64(ReduceOp op, void* out, const void* a, const void* b, size_t n) { Reduce<int64_t>(op, out, a, b, n); }
void ReduceUInt8(ReduceOp op, void* out, const void* a, const void* b, size_t n) { Reduce<uint8_t>(op, out, a, b, n); }

void ReduceChain(DataType type, ReduceOp op, void* out, const void* const* in, size_t m, size_t n) {
  if (m == 1) {
    if (out != in[0]) std::memcpy(out, in[0], n * DataTypeSize(type));
    return;
  }
  switch (type) {
    case DataType::kFloat32: return ChainTyped<float>(op, out, in, m, n);
    case DataType::kFloat64: return ChainTyped<double>(op, out, in, m, n);
    case DataType::kInt32: return ChainTyped<int32_t>(op, out, in, m, n);
    case DataType::kInt64: return ChainTyped<int64_t>(op, out, in, m, n);
    case DataType::kUInt8: return ChainTyped<uint8_t>(op, out, in, m, n);
    case DataType::kFloat16:
    case DataType::kBFloat16: return ChainByPairs(type, op, out, in, m, n);
  }
}

}  // namespace ringmaster::common
