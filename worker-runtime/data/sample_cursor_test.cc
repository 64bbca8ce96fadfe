#include "worker-runtime/data/sample_cursor.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::data {
namespace {

TEST(SampleCursorTest, RoundTrip) {
  for (SampleCursor c : {SampleCursor{0, 0}, SampleCursor{3, 17}, SampleCursor{~0ULL, ~0ULL - 1}}) {
    StatusOr<SampleCursor> back = DecodeCursor(EncodeCursor(c));
    ASSERT_OK(back) << back.status();
    EXPECT_EQ(*back, c);
  }
}

TEST(SampleCursorTest, GarbageIsDataLossNeverACrash) {
  const std::string good = EncodeCursor({2, 5});
  for (std::string bad :
       {std::string(), std::string("{"), std::string("null"), std::string("[1,2]"), std::string("{\"version\":1}"),
        std::string("{\"version\":2,\"epoch\":1,\"committed\":1}"),
        std::string("{\"version\":1,\"epoch\":-1,\"committed\":1}"),
        std::string("{\"version\":1,\"epoch\":1.5,\"committed\":1}"),
        std::string("{\"version\":1,\"epoch\":\"1\",\"committed\":1}"), std::string("\xff\xfe\x00garbage", 10)}) {
    StatusOr<SampleCursor> c = DecodeCursor(bad);
    EXPECT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), StatusCode::kDataLoss) << bad;
  }
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(DecodeCursor(good.substr(0, cut)).ok()) << cut;
  }
}

}  // namespace
}  // namespace ringmaster::data
