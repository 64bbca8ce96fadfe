#include "operator/kubectl_plugin/durations.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::kubectl_plugin {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(HumanDurationTest, TwoLargestUnitsWithTheSecondPadded) {
  EXPECT_EQ(HumanDuration(milliseconds(0)), "0s");
  EXPECT_EQ(HumanDuration(milliseconds(999)), "0s");  // truncated, never rounded up
  EXPECT_EQ(HumanDuration(seconds(45)), "45s");
  EXPECT_EQ(HumanDuration(seconds(59)), "59s");
  EXPECT_EQ(HumanDuration(seconds(60)), "1m00s");
  EXPECT_EQ(HumanDuration(seconds(65)), "1m05s");
  EXPECT_EQ(HumanDuration(seconds(3599)), "59m59s");
  EXPECT_EQ(HumanDuration(seconds(3600)), "1h00m");
  EXPECT_EQ(HumanDuration(seconds(2 * 3600 + 3 * 60 + 59)), "2h03m");
  EXPECT_EQ(HumanDuration(seconds(86400 + 3 * 3600)), "1d03h");
  EXPECT_EQ(HumanDuration(seconds(12 * 86400)), "12d00h");
  EXPECT_EQ(HumanDuration(milliseconds(-5000)), "0s");
}

TEST(FormatSecondsTest, OneDecimal) {
  EXPECT_EQ(FormatSeconds(0), "0.0s");
  EXPECT_EQ(FormatSeconds(2.44), "2.4s");
  EXPECT_EQ(FormatSeconds(65), "65.0s");
}

TEST(ParseDurationTest, SecondsAndGoDurations) {
  EXPECT_EQ(ParseDuration("300").value(), seconds(300));
  EXPECT_EQ(ParseDuration("90s").value(), seconds(90));
  EXPECT_EQ(ParseDuration("5m").value(), seconds(300));
  EXPECT_EQ(ParseDuration("1h").value(), seconds(3600));
  EXPECT_EQ(ParseDuration("1m30s").value(), seconds(90));
  EXPECT_EQ(ParseDuration("1h2m3s").value(), seconds(3723));
}

TEST(ParseDurationTest, RefusesWhatIsNotADuration) {
  for (const char* bad : {"", "0", "0s", "5x", "m", "-5m", "1.5m", "1m30", "5 m", "99999999999999999999"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << "'" << bad << "' parsed as " << (d.ok() ? d->count() : 0);
    if (!d.ok()) {
      EXPECT_NE(d.status().message().find("e.g. 300, 90s, 5m"), std::string::npos) << d.status();
    }
  }
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin
