#include "api/peer_report.h"

#include <gtest/gtest.h>

namespace ringmaster::api {
namespace {

TEST(PeerReportTest, RoundTripsThroughItsConfigMapValue) {
  PeerReport r{"job-worker-1", 7, {"job-worker-2", "job-worker-3"}, "2026-11-24T01:00:00Z"};
  auto back = DecodePeerReport("job-worker-1", EncodePeerReport(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
  EXPECT_EQ(PeerReportsName("job"), "job-peer-reports");
}

TEST(PeerReportTest, GarbageIsAnErrorNamingTheReporterAndField) {
  for (const char* bad :
       {"", "{", "[]", "{\"generation\":0}", "{\"generation\":\"3\"}", "{\"generation\":3,\"unreachable\":\"x\"}",
        "{\"generation\":3,\"unreachable\":[1]}", "{\"generation\":3,\"unreachable\":[\"\"]}", "\xff\xfe"}) {
    auto r = DecodePeerReport("w-0", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("peer report of w-0"), std::string::npos) << r.status().ToString();
  }
}

TEST(PeerReportTest, AReportWithoutUnreachablePeersSaysItReachesEveryone) {
  auto r = DecodePeerReport("w-0", "{\"generation\":2}");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->unreachable.empty());
}

}  // namespace
}  // namespace ringmaster::api
