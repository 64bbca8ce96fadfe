// Readiness probes as the pod runner runs them (readiness_probe.h): parsing a container's readinessProbe
// and counting attempts into readiness.
#include "tests/pod_runner/readiness_probe.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;

TEST(ReadinessTest, ParsesProbesAndCountsThresholds) {
  auto p = ParseReadinessProbe(json::parse(R"({"name": "c", "ports": [{"name": "health", "containerPort": 8081}],
      "readinessProbe": {"httpGet": {"path": "readyz", "port": "health"}, "periodSeconds": 2, "failureThreshold": 2,
                         "successThreshold": 2, "initialDelaySeconds": 1}})"));
  ASSERT_OK(p);
  ASSERT_TRUE(p->has_value());
  const ProbeSpec& s = **p;
  EXPECT_EQ(s.kind, ProbeSpec::Kind::kHttpGet);
  EXPECT_EQ(s.port, 8081);
  EXPECT_EQ(s.path, "/readyz");
  EXPECT_EQ(s.period, std::chrono::seconds(2));
  auto tcp = ParseReadinessProbe(json::parse(R"({"name": "c", "readinessProbe": {"tcpSocket": {"port": 29400}}})"));
  ASSERT_OK(tcp);
  EXPECT_EQ((*tcp)->kind, ProbeSpec::Kind::kTcpSocket);
  EXPECT_EQ((*tcp)->port, 29400);
  EXPECT_EQ((*tcp)->failure_threshold, 3);
  EXPECT_FALSE(ParseReadinessProbe(json::parse(R"({"name": "c"})"))->has_value());
  EXPECT_EQ(ParseReadinessProbe(json::parse(R"({"name": "c", "readinessProbe": {"tcpSocket": {"port": "nope"}}})"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseReadinessProbe(
                json::parse(R"({"name": "c", "readinessProbe": {"httpGet": {"port": 1, "scheme": "HTTPS"}}})"))
                .status()
                .code(),
            StatusCode::kUnimplemented);
  Status exec =
      ParseReadinessProbe(json::parse(R"({"name": "c", "readinessProbe": {"exec": {"command": ["cat", "/ready"]}}})"))
          .status();
  EXPECT_EQ(exec.code(), StatusCode::kUnimplemented);
  EXPECT_NE(exec.message().find("exec"), std::string::npos) << exec;

  using Clock = ReadinessState::Clock;
  const Clock::time_point t0 = Clock::now();
  ReadinessState r(s, t0);
  EXPECT_FALSE(r.Due(t0));  // the initial delay
  EXPECT_TRUE(r.Due(t0 + std::chrono::seconds(1)));
  EXPECT_FALSE(r.Record(true, t0 + std::chrono::seconds(1)));  // one success of two
  EXPECT_FALSE(r.Due(t0 + std::chrono::seconds(2)));           // every period
  EXPECT_TRUE(r.Record(true, t0 + std::chrono::seconds(3)));
  EXPECT_TRUE(r.ready());
  EXPECT_FALSE(r.Record(false, t0 + std::chrono::seconds(5)));  // one failure of two
  EXPECT_TRUE(r.ready());
  EXPECT_TRUE(r.Record(false, t0 + std::chrono::seconds(7)));
  EXPECT_FALSE(r.ready());
}

}  // namespace
}  // namespace ringmaster::testing
