#include "common/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ringmaster::runtime {
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
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0f + 1.0f / 2048)), 1.0f);            // tie -> even (down)
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
}  // namespace ringmaster::runtime
