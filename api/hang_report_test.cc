#include "api/hang_report.h"

#include <gtest/gtest.h>

namespace ringmaster::api {
namespace {

TEST(HangReportTest, RoundTripsThroughItsValue) {
  HangReport r{"job-worker-1", 7, 42.5, 0.25, 1200, "2026-11-24T01:00:00.125Z"};
  auto back = DecodeHangReport("job-worker-1", EncodeHangReport(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
}

TEST(HangReportTest, ItsKeyNeverCollidesWithAPodsOrTheProgressReport) {
  EXPECT_EQ(HangReportKey("job-worker-1"), "_hung.job-worker-1");
  EXPECT_EQ(HangReporterOfKey("_hung.job-worker-1"), "job-worker-1");
  EXPECT_EQ(HangReporterOfKey("job-worker-1"), std::nullopt);
  EXPECT_EQ(HangReporterOfKey("_progress"), std::nullopt);
  EXPECT_EQ(HangReporterOfKey("_hung."), std::nullopt);
  EXPECT_EQ(HangReportFileName("w3"), "hang.w3.json");
  EXPECT_EQ(HangReporterOfFileName("hang.w3.json"), "w3");
  EXPECT_EQ(HangReporterOfFileName("hang.w3.json.tmp.12"), std::nullopt);
  EXPECT_EQ(HangReporterOfFileName("hb.w3"), std::nullopt);
  EXPECT_EQ(HangReporterOfFileName("hang..json"), std::nullopt);
}

TEST(HangReportTest, GarbageIsAnErrorNamingTheReporterAndField) {
  for (const char* bad :
       {"", "{", "[]", "{\"generation\":0,\"stalledSeconds\":1,\"medianStepSeconds\":1}",
        "{\"generation\":\"3\",\"stalledSeconds\":1,\"medianStepSeconds\":1}",
        "{\"generation\":3,\"medianStepSeconds\":1}",
        "{\"generation\":3,\"stalledSeconds\":-1,\"medianStepSeconds\":1}",
        "{\"generation\":3,\"stalledSeconds\":1,\"medianStepSeconds\":\"x\"}",
        "{\"generation\":3,\"stalledSeconds\":1,\"medianStepSeconds\":1,\"step\":-2}",
        "{\"generation\":3,\"stalledSeconds\":1,\"medianStepSeconds\":1,\"reportedAt\":\"noon\"}", "\xff\xfe"}) {
    auto r = DecodeHangReport("w-0", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("hang report of w-0"), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace ringmaster::api
