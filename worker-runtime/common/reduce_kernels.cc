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

}  // namespace ringmaster::common
