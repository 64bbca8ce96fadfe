#include "worker-runtime/common/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ringmaster::common {
namespace {

TEST(DtypeTest, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    float f = HalfToFloat(v);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), v) << std::hex << h;
  }
}

TEST(DtypeTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0f + 1.0f / 2048)), 1.0f);                // tie -> even (down)
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even (up)
  EXPECT_EQ(HalfToFloat(FloatToHalf(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(70000.0f))));
  EXPECT_EQ(HalfToFloat(FloatToHalf(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
}

TEST(DtypeTest, BFloat16RoundTripsAndRounds) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = BFloat16ToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    EXPECT_EQ(FloatToBFloat16(f), b);
  }
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(257.0f)), 256.0f);  // tie -> even
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(259.0f)), 260.0f);
}

TEST(DtypeTest, ReduceEveryTypeAndOp) {
  for (DataType t : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      std::vector<uint8_t> a(3 * 8), b(3 * 8), out(3 * 8);
      double av[] = {1, 5, 2}, bv[] = {3, 4, 2};
      for (int i = 0; i < 3; ++i) {
        StoreFromDouble(t, a.data(), i, av[i]);
        StoreFromDouble(t, b.data(), i, bv[i]);
      }
      ReduceBuffers(t, op, out.data(), a.data(), b.data(), 3);
      for (int i = 0; i < 3; ++i) {
        double want = op == ReduceOp::kMin       ? std::min(av[i], bv[i])
                      : op == ReduceOp::kMax     ? std::max(av[i], bv[i])
                      : op == ReduceOp::kProduct ? av[i] * bv[i]
                                                 : av[i] + bv[i];
        EXPECT_EQ(LoadAsDouble(t, out.data(), i), want) << DataTypeName(t) << " " << ReduceOpName(op);
      }
      FinishAverage(t, out.data(), 3, 1);  // no-op
    }
  }
}

// memcmp of n bytes; at n = 0 the buffers may be empty vectors whose data() is null, which memcmp must
// never get, even for 0 bytes (UBSan: "null pointer passed as argument 1").
bool SameBytes(const uint8_t* x, const uint8_t* y, size_t n) { return n == 0 || std::memcmp(x, y, n) == 0; }

// The vectorised kernels (whole cache lines, then a tail) against one element at a time, for every length
// around the line size, unaligned buffers, and out being a or b.
TEST(DtypeTest, ReduceMatchesElementByElementAtAnyLengthAlignmentAndAlias) {
  for (DataType t : kAllDataTypes) {
    const size_t es = DataTypeSize(t);
    for (ReduceOp op : kAllReduceOps) {
      for (size_t n : {0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000}) {
        for (size_t shift : {0, 1, 3}) {
          std::vector<uint8_t> a(n * es + shift), b(n * es + shift), out(n * es + shift);
          for (size_t i = 0; i < n; ++i) {
            StoreFromDouble(t, a.data() + shift, i, static_cast<double>((i * 7) % 11) - 3);
            StoreFromDouble(t, b.data() + shift, i, static_cast<double>((i * 5) % 13) - 6);
          }
          std::vector<uint8_t> want(n * es);
          for (size_t i = 0; i < n; ++i) {
            ReduceBuffers(t, op, want.data() + i * es, a.data() + shift + i * es, b.data() + shift + i * es, 1);
          }
          ReduceBuffers(t, op, out.data() + shift, a.data() + shift, b.data() + shift, n);
          EXPECT_TRUE(SameBytes(out.data() + shift, want.data(), n * es))
              << DataTypeName(t) << " " << ReduceOpName(op) << " n=" << n << " shift=" << shift;
          std::vector<uint8_t> in_a = a, in_b = b;  // out is a, then out is b
          ReduceBuffers(t, op, in_a.data() + shift, in_a.data() + shift, b.data() + shift, n);
          ReduceBuffers(t, op, in_b.data() + shift, a.data() + shift, in_b.data() + shift, n);
          EXPECT_TRUE(SameBytes(in_a.data() + shift, want.data(), n * es)) << DataTypeName(t) << " n=" << n;
          EXPECT_TRUE(SameBytes(in_b.data() + shift, want.data(), n * es)) << DataTypeName(t) << " n=" << n;
        }
      }
    }
  }
}

TEST(DtypeTest, MinAndMaxKeepTheirNaNRuleInEveryLane) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a(40, 1.0f), b(40, 2.0f), out(40);
  a[3] = nan;   // inside the vectorised lines
  b[37] = nan;  // in the tail
  ReduceBuffers(DataType::kFloat32, ReduceOp::kMin, out.data(), a.data(), b.data(), a.size());
  EXPECT_TRUE(std::isnan(out[3]));  // b < NaN is false: a (NaN) is kept
  EXPECT_EQ(out[37], 1.0f);         // NaN < a is false: a is kept
  ReduceBuffers(DataType::kFloat32, ReduceOp::kMax, out.data(), a.data(), b.data(), a.size());
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[37], 1.0f);
  EXPECT_EQ(out[0], 2.0f);
}

TEST(DtypeTest, AverageTruncatesIntegersAndDividesFloats) {
  int32_t ints[] = {7, -7};
  FinishAverage(DataType::kInt32, ints, 2, 2);
  EXPECT_EQ(ints[0], 3);
  EXPECT_EQ(ints[1], -3);
  uint16_t h = FloatToBFloat16(3.0f);
  FinishAverage(DataType::kBFloat16, &h, 1, 2);
  EXPECT_EQ(BFloat16ToFloat(h), 1.5f);
}

TEST(DtypeTest, ParsesNames) {
  EXPECT_EQ(ParseDataType("bfloat16").value(), DataType::kBFloat16);
  EXPECT_EQ(ParseReduceOp("product").value(), ReduceOp::kProduct);
  EXPECT_EQ(ParseDataType("float128").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::common
