#include "operator/cmd/options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/status_test_macros.h"

namespace ringmaster::operator_cmd {
namespace {

TEST(OperatorFlagsTest, DefaultsAndTheNamesChecksRelyOn) {
  auto o = ParseOperatorFlags({"--kubeconfig", "/k", "--namespace=team", "--metrics-bind-address", "127.0.0.1:0",
                               "--health-probe-bind-address=127.0.0.1:0", "--leader-elect"});
  ASSERT_OK(o) << o.status();
  EXPECT_EQ(o->kubeconfig, "/k");
  EXPECT_EQ(o->watch_namespace, "team");
  EXPECT_EQ(o->metrics_bind_address, "127.0.0.1:0");
  EXPECT_TRUE(o->leader_elect);
  EXPECT_EQ(o->workers, 4);
  EXPECT_EQ(o->lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(o->shutdown_timeout, std::chrono::seconds(10));
  EXPECT_EQ(o->log_format, LogFormat::kText);
  EXPECT_TRUE(o->worker_network_policy);
}

TEST(OperatorFlagsTest, WorkerNetworkPolicyIsOnUnlessTurnedOff) {
  // The chart always passes it with a value (workerNetworkPolicy.enabled).
  for (const auto& [arg, want] : std::vector<std::pair<std::string, bool>>{{"--worker-network-policy", true},
                                                                           {"--worker-network-policy=true", true},
                                                                           {"--worker-network-policy=false", false}}) {
    auto o = ParseOperatorFlags({arg});
    ASSERT_OK(o) << arg;
    EXPECT_EQ(o->worker_network_policy, want) << arg;
  }
  EXPECT_NE(ParseOperatorFlags({"--worker-network-policy=maybe"}).status().message().find("--worker-network-policy"),
            std::string::npos);
}

TEST(OperatorFlagsTest, DisruptionTaintsHaveTheCloudNoticesByDefaultAndCanBeReplacedOrEmptied) {
  auto defaults = ParseOperatorFlags({});
  ASSERT_OK(defaults);
  EXPECT_NE(std::find(defaults->disruption_taints.begin(), defaults->disruption_taints.end(), "karpenter.sh/disrupted"),
            defaults->disruption_taints.end());
  auto two = ParseOperatorFlags({"--disruption-taints=example.com/spot-notice,drain=soon"});
  ASSERT_OK(two);
  EXPECT_EQ(two->disruption_taints, (std::vector<std::string>{"example.com/spot-notice", "drain=soon"}));
  auto none = ParseOperatorFlags({"--disruption-taints=none"});
  ASSERT_OK(none);
  EXPECT_TRUE(none->disruption_taints.empty());
}

TEST(OperatorFlagsTest, ValuesOfEveryKind) {
  auto o =
      ParseOperatorFlags({"--workers=3", "--lease-duration", "30s", "--renew-deadline", "20", "--log-format", "json",
                          "--kube-api-qps", "200", "--leader-elect=false", "--workers", "8", "--shutdown-timeout=3s"});
  ASSERT_OK(o);
  EXPECT_EQ(o->shutdown_timeout, std::chrono::seconds(3));
  EXPECT_EQ(o->workers, 8);
  EXPECT_EQ(o->lease_duration, std::chrono::seconds(30));
  EXPECT_EQ(o->renew_deadline, std::chrono::seconds(20));
  EXPECT_EQ(o->log_format, LogFormat::kJson);
  EXPECT_EQ(o->kube_api_qps, 200);
  EXPECT_FALSE(o->leader_elect);
}

TEST(OperatorFlagsTest, BadInputNamesTheFlag) {
  EXPECT_NE(ParseOperatorFlags({"--workers", "zero"}).status().message().find("--workers"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--workers", "4abc"}).status().message().find("--workers"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--workers", "-1"}).status().message().find("--workers"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--bogus"}).status().message().find("--bogus"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--kubeconfig"}).status().message().find("--kubeconfig"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--log-format", "xml"}).status().message().find("text or json"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--lease-duration", "15x"}).status().message().find("--lease-duration"),
            std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--shutdown-timeout", "0s"}).status().message().find("--shutdown-timeout"),
            std::string::npos);
  EXPECT_NE(
      ParseOperatorFlags({"--lease-duration", "5s", "--renew-deadline", "10s"}).status().message().find("shorter"),
      std::string::npos);
}

TEST(OperatorFlagsTest, HelpExplainsEveryFlag) {
  std::string usage = UsageText();
  for (const char* flag :
       {"--kubeconfig", "--namespace", "--metrics-bind-address", "--health-probe-bind-address", "--leader-elect",
        "--log-format", "--workers", "--worker-network-policy", "--help", "=127.0.0.1:8080", "15s"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
  auto o = ParseOperatorFlags({"--help", "--bogus"});
  ASSERT_OK(o);
  EXPECT_TRUE(o->help);
}

}  // namespace
}  // namespace ringmaster::operator_cmd
