#include "tests/gpu_emulation/reduce.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace gpuemu {
namespace {

// A small float (fp8) format: exponent bits, mantissa bits, and whether it has infinities (e5m2)
// or only a NaN at all ones (e4m3, "FN").
struct MiniFormat {
  int exp_bits;
  int man_bits;
  bool ieee;
};
constexpr MiniFormat kE4M3{4, 3, false};
constexpr MiniFormat kE5M2{5, 2, true};

float MiniToFloat(uint8_t v, MiniFormat f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const bool neg = v & 0x80;
  const int e = (v >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int m = v & ((1 << f.man_bits) - 1);
  const int e_max = (1 << f.exp_bits) - 1;
  float r;
  if (f.ieee && e == e_max) {
    r = m ? NAN : INFINITY;
  } else if (!f.ieee && e == e_max && m == (1 << f.man_bits) - 1) {
    r = NAN;
  } else if (e == 0) {
    r = std::ldexp(static_cast<float>(m), 1 - bias - f.man_bits);
  } else {
    r = std::ldexp(static_cast<float>(m + (1 << f.man_bits)), e - bias - f.man_bits);
  }
  return neg ? -r : r;
}

// Round to nearest even, saturating to the largest finite value (__NV_SATFINITE).
uint8_t FloatToMini(float x, MiniFormat f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const uint8_t nan = 0x7f;  // e4m3: S.1111.111; e5m2: S.11111.11
  const int e_max_field = (1 << f.exp_bits) - 1;
  // the largest finite encoding: ieee: exponent all ones minus one, mantissa all ones;
  // FN: exponent all ones, mantissa all ones minus one
  const uint8_t max_finite = f.ieee ? static_cast<uint8_t>(((e_max_field - 1) << f.man_bits) | ((1 << f.man_bits) - 1))
                                    : static_cast<uint8_t>((e_max_field << f.man_bits) | ((1 << f.man_bits) - 2));
  if (std::isnan(x)) return sign | nan;
  const double a = std::fabs(static_cast<double>(x));
  const double max_value = MiniToFloat(max_finite, f);
  if (a >= max_value) return sign | max_finite;
  int e2;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  int exp = e2 - 1;    // a = 1.x * 2^exp
  const int min_exp = 1 - bias;
  if (a == 0) return sign;
  uint32_t bits;
  if (exp < min_exp) {  // subnormal
    double q = std::nearbyint(std::ldexp(a, -(min_exp - f.man_bits)));
    bits = static_cast<uint32_t>(q);  // may round up to the smallest normal: the encoding carries
  } else {
    double q = std::nearbyint(std::ldexp(a, f.man_bits - exp));  // in [2^m, 2^(m+1)]
    uint32_t qi = static_cast<uint32_t>(q);
    if (qi == (1u << (f.man_bits + 1))) {
      qi >>= 1;
      ++exp;
    }
    bits = (static_cast<uint32_t>(exp + bias) << f.man_bits) | (qi & ((1u << f.man_bits) - 1));
  }
  if (bits > max_finite) bits = max_finite;
  return sign | static_cast<uint8_t>(bits);
}

template <typename T>
T ApplyInt(T a, T b, ncclRedOp_t op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case ncclSum:
    case ncclAvg: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case ncclProd: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a;
  }
}

template <typename F>
F ApplyFloat(F a, F b, ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
    case ncclAvg: return a + b;
    case ncclProd: return a * b;
    case ncclMax: return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
    case ncclMin: return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
    default: return a;
  }
}

template <typename T>
void FoldInt(void* acc, const void* in, size_t count, ncclRedOp_t op, bool first) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  if (first) {
    std::memcpy(a, b, count * sizeof(T));
    return;
  }
  for (size_t i = 0; i < count; ++i) a[i] = ApplyInt(a[i], b[i], op);
}

// A floating type stored as S, computed as C, converted by Load/Store.
template <typename S, typename C, C (*Load)(S), S (*Store)(C)>
void FoldFloat(void* acc, const void* in, size_t count, ncclRedOp_t op, int nranks, bool first) {
  S* a = static_cast<S*>(acc);
  const S* b = static_cast<const S*>(in);
  const bool avg = op == ncclAvg;
  const C scale = static_cast<C>(1) / static_cast<C>(nranks);
  for (size_t i = 0; i < count; ++i) {
    C v = Load(b[i]);
    if (avg) v = v * scale;  // ncclDevPreMulSum
    a[i] = first ? Store(v) : Store(ApplyFloat(Load(a[i]), v, op));
  }
}

template <typename T>
void DivideInt(void* acc, size_t count, int nranks) {
  T* a = static_cast<T*>(acc);
  for (size_t i = 0; i < count; ++i) a[i] = static_cast<T>(a[i] / static_cast<T>(nranks));  // ncclDevSumPostDiv
}

float Identity32(float v) { return v; }
double Identity64(double v) { return v; }
float LoadE4M3(uint8_t v) { return MiniToFloat(v, kE4M3); }
uint8_t StoreE4M3(float v) { return FloatToMini(v, kE4M3); }
float LoadE5M2(uint8_t v) { return MiniToFloat(v, kE5M2); }
uint8_t StoreE5M2(float v) { return FloatToMini(v, kE5M2); }

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) {
    float f = std::ldexp(static_cast<float>(m), -24);
    return sign ? -f : f;
  }
  uint32_t x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00 : 0x7c00);  // NaN, inf
  if (a >= 0x477ff000u) return sign | 0x7c00;                               // rounds to inf
  if (a < 0x38800000u) {                                                    // a half subnormal
    if (a < 0x33000000u) return sign;
    const uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t h = (a - 0x38000000u) >> 13;
  const uint32_t rem = a & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float Bf16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

size_t TypeSize(ncclDataType_t type) {
  switch (static_cast<int>(type)) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

void Fold(void* acc, const void* in, size_t count, ncclDataType_t type, ncclRedOp_t op, int nranks, bool first) {
  switch (static_cast<int>(type)) {
    case ncclInt8: FoldInt<int8_t>(acc, in, count, op, first); break;
    case ncclUint8: FoldInt<uint8_t>(acc, in, count, op, first); break;
    case ncclInt32: FoldInt<int32_t>(acc, in, count, op, first); break;
    case ncclUint32: FoldInt<uint32_t>(acc, in, count, op, first); break;
    case ncclInt64: FoldInt<int64_t>(acc, in, count, op, first); break;
    case ncclUint64: FoldInt<uint64_t>(acc, in, count, op, first); break;
    case ncclFloat16: FoldFloat<uint16_t, float, HalfToFloat, FloatToHalf>(acc, in, count, op, nranks, first); break;
    case ncclBfloat16: FoldFloat<uint16_t, float, Bf16ToFloat, FloatToBf16>(acc, in, count, op, nranks, first); break;
    case ncclFloat32: FoldFloat<float, float, Identity32, Identity32>(acc, in, count, op, nranks, first); break;
    case ncclFloat64: FoldFloat<double, double, Identity64, Identity64>(acc, in, count, op, nranks, first); break;
    case ncclFloat8e4m3: FoldFloat<uint8_t, float, LoadE4M3, StoreE4M3>(acc, in, count, op, nranks, first); break;
    case ncclFloat8e5m2: FoldFloat<uint8_t, float, LoadE5M2, StoreE5M2>(acc, in, count, op, nranks, first); break;
    default: break;
  }
}

void FinishAvg(void* acc, size_t count, ncclDataType_t type, int nranks) {
  switch (static_cast<int>(type)) {
    case ncclInt8: DivideInt<int8_t>(acc, count, nranks); break;
    case ncclUint8: DivideInt<uint8_t>(acc, count, nranks); break;
    case ncclInt32: DivideInt<int32_t>(acc, count, nranks); break;
    case ncclUint32: DivideInt<uint32_t>(acc, count, nranks); break;
    case ncclInt64: DivideInt<int64_t>(acc, count, nranks); break;
    case ncclUint64: DivideInt<uint64_t>(acc, count, nranks); break;
    default: break;  // floating types: pre-multiplied in Fold
  }
}

}  // namespace gpuemu
