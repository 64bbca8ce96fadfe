#include "base/time_format.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ringmaster {
namespace {

using std::chrono::system_clock;

system_clock::time_point At(long long micros) { return system_clock::time_point(std::chrono::microseconds(micros)); }

TEST(TimeFormatTest, EachPrecisionTruncates) {
  const auto t = At(1795414551123456LL);  // 2026-11-23T06:15:51.123456Z
  EXPECT_EQ(FormatRfc3339(t), "2026-11-23T06:15:51Z");
  EXPECT_EQ(FormatRfc3339(t, TimePrecision::kMillis), "2026-11-23T06:15:51.123Z");
  EXPECT_EQ(FormatRfc3339(t, TimePrecision::kMicros), "2026-11-23T06:15:51.123456Z");
  EXPECT_EQ(FormatRfc3339(At(999), TimePrecision::kMillis), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339(At(-1), TimePrecision::kMicros), "1969-12-31T23:59:59.999999Z");
}

TEST(TimeFormatTest, UnixMillisCoverTheWholeRange) {
  EXPECT_EQ(FormatUnixMillisRfc3339(1795414551123LL), "2026-11-23T06:15:51.123Z");
  EXPECT_EQ(FormatUnixMillisRfc3339(-1), "1969-12-31T23:59:59.999Z");
  // Beyond system_clock's +-292 years, where a conversion to its nanoseconds would overflow.
  EXPECT_EQ(FormatUnixMillisRfc3339(-62135596800000LL), "0001-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatUnixMillisRfc3339(253402300799999LL), "9999-12-31T23:59:59.999Z");
  EXPECT_FALSE(FormatUnixMillisRfc3339(INT64_MAX).empty());
  EXPECT_FALSE(FormatUnixMillisRfc3339(INT64_MIN).empty());
}

TEST(TimeFormatTest, ParseKeepsFractionsAndRefusesOtherZones) {
  const auto whole = At(1795414551000000LL);
  EXPECT_EQ(ParseRfc3339("2026-11-23T06:15:51Z"), whole);
  EXPECT_EQ(ParseRfc3339("2026-11-23T06:15:51.123456Z"), At(1795414551123456LL));
  EXPECT_EQ(ParseRfc3339("2026-11-23T06:15:51.5Z"), At(1795414551500000LL));
  EXPECT_EQ(ParseRfc3339("2026-11-23T06:15:51.1234567Z"), At(1795414551123456LL));
  const auto millis = At(1795414551123000LL);
  EXPECT_EQ(ParseRfc3339(FormatRfc3339(millis, TimePrecision::kMillis)), millis);
  EXPECT_FALSE(ParseRfc3339("2026-11-23T06:15:51+01:00").has_value());
  EXPECT_FALSE(ParseRfc3339("2026-11-23 06:15:51Z").has_value());
  EXPECT_FALSE(ParseRfc3339("").has_value());
  EXPECT_FALSE(ParseRfc3339("yesterday").has_value());
  EXPECT_FALSE(ParseRfc3339("2026-11-23T06:15:51Zjunk").has_value());
}

}  // namespace
}  // namespace ringmaster
