#include "worker-runtime/common/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "worker-runtime/common/reduce_kernels.h"

namespace ringmaster::common {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <typename T>
T Combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return static_cast<T>(a + b);
    case ReduceOp::kMin: return b < a ? b : a;
    case ReduceOp::kMax: return a < b ? b : a;
    case ReduceOp::kProduct: return static_cast<T>(a * b);
  }
  return a;
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Reduce16(ReduceOp op, void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<unsigned char*>(out);
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i) {
    uint16_t ha, hb;
    std::memcpy(&ha, x + 2 * i, 2);
    std::memcpy(&hb, y + 2 * i, 2);
    float fa = ToFloat(ha), fb = ToFloat(hb);
    uint16_t hr = FromFloat(Combine(op, fa, fb));
    std::memcpy(o + 2 * i, &hr, 2);
  }
}

template <typename T>
void DivideTyped(void* buf, size_t n, int divisor) {
  auto* p = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    v = static_cast<T>(v / static_cast<T>(divisor));
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Divide16(void* buf, size_t n, int divisor) {
  auto* p = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    h = FromFloat(ToFloat(h) / static_cast<float>(divisor));
    std::memcpy(p + 2 * i, &h, 2);
  }
}

}  // namespace

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUInt8: return 1;
  }
  return 1;
}

std::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
  }
  return "?";
}

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "product";
  }
  return "?";
}

StatusOr<DataType> ParseDataType(std::string_view name) {
  for (DataType t : kAllDataTypes) {
    if (DataTypeName(t) == name) return t;
  }
  return InvalidArgumentError("unknown data type '" + std::string(name) +
                              "' (want float32, float64, float16, bfloat16, int32, int64 or uint8)");
}

StatusOr<ReduceOp> ParseReduceOp(std::string_view name) {
  for (ReduceOp op : kAllReduceOps) {
    if (ReduceOpName(op) == name) return op;
  }
  return InvalidArgumentError("unknown reduce op '" + std::string(name) + "' (want sum, avg, min, max or product)");
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return BitsFloat(bits);
}

uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {               // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return sign;  // < 2^-25 rounds to zero
    uint32_t e = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (113 - e) - 1 ... gives half subnormal mantissa
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t e = (abs >> 23) - 112;
  uint32_t mant = abs & 0x7fffffu;
  uint32_t h = (e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

float BFloat16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBFloat16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

void ReduceBuffers(DataType type, ReduceOp op, void* out, const void* a, const void* b, size_t count) {
  switch (type) {
    case DataType::kFloat32: return ReduceFloat32(op, out, a, b, count);
    case DataType::kFloat64: return ReduceFloat64(op, out, a, b, count);
    case DataType::kInt32: return ReduceInt32(op, out, a, b, count);
    case DataType::kInt64: return ReduceInt64(op, out, a, b, count);
    case DataType::kUInt8: return ReduceUInt8(op, out, a, b, count);
    case DataType::kFloat16: return Reduce16<HalfToFloat, FloatToHalf>(op, out, a, b, count);
    case DataType::kBFloat16: return Reduce16<BFloat16ToFloat, FloatToBFloat16>(op, out, a, b, count);
  }
}

void FinishAverage(DataType type, void* buf, size_t count, int divisor) {
  if (divisor <= 1) return;
  switch (type) {
    case DataType::kFloat32: return DivideTyped<float>(buf, count, divisor);
    case DataType::kFloat64: return DivideTyped<double>(buf, count, divisor);
    case DataType::kInt32: return DivideTyped<int32_t>(buf, count, divisor);
    case DataType::kInt64: return DivideTyped<int64_t>(buf, count, divisor);
    case DataType::kUInt8: return DivideTyped<uint8_t>(buf, count, divisor);
    case DataType::kFloat16: return Divide16<HalfToFloat, FloatToHalf>(buf, count, divisor);
    case DataType::kBFloat16: return Divide16<BFloat16ToFloat, FloatToBFloat16>(buf, count, divisor);
  }
}

double LoadAsDouble(DataType type, const void* buf, size_t i) {
  const auto* p = static_cast<const unsigned char*>(buf) + i * DataTypeSize(type);
  switch (type) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DataType::kUInt8: return *p;
    case DataType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return HalfToFloat(h);
    }
    case DataType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return BFloat16ToFloat(h);
    }
  }
  return 0;
}

void StoreFromDouble(DataType type, void* buf, size_t i, double value) {
  auto* p = static_cast<unsigned char*>(buf) + i * DataTypeSize(type);
  switch (type) {
    case DataType::kFloat32: {
      float v = static_cast<float>(value);
      std::memcpy(p, &v, 4);
      return;
    }
    case DataType::kFloat64: {
      std::memcpy(p, &value, 8);
      return;
    }
    case DataType::kInt32: {
      int32_t v = static_cast<int32_t>(value);
      std::memcpy(p, &v, 4);
      return;
    }
    case DataType::kInt64: {
      int64_t v = static_cast<int64_t>(value);
      std::memcpy(p, &v, 8);
      return;
    }
    case DataType::kUInt8: {
      *p = static_cast<uint8_t>(value);
      return;
    }
    case DataType::kFloat16: {
      uint16_t h = FloatToHalf(static_cast<float>(value));
      std::memcpy(p, &h, 2);
      return;
    }
    case DataType::kBFloat16: {
      uint16_t h = FloatToBFloat16(static_cast<float>(value));
      std::memcpy(p, &h, 2);
      return;
    }
  }
}

}  // namespace ringmaster::common
