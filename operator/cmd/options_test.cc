#include "cmd/options.h"

#include <gtest/gtest.h>
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
}

TEST(OperatorFlagsTest, BadInputNamesTheFlag) {
  EXPECT_NE(ParseOperatorFlags({"--workers", "zero"}).status().message().find("--workers"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--bogus"}).status().message().find("unknown flag --bogus"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--kubeconfig"}).status().message().find("needs a value"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--log-format", "xml"}).status().message().find("text or json"), std::string::npos);
  EXPECT_NE(ParseOperatorFlags({"--lease-duration", "5s", "--renew-deadline", "10s"}).status().message().find("shorter"),
            std::string::npos);
}

TEST(OperatorFlagsTest, HelpExplainsEveryFlag) {
  std::string usage = UsageText();
  for (const char* flag : {"--kubeconfig", "--namespace", "--metrics-bind-address", "--health-probe-bind-address",
                           "--leader-elect", "--log-format", "--workers", "--help"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
  auto o = ParseOperatorFlags({"--help", "--bogus"});
  ASSERT_OK(o);
  EXPECT_TRUE(o->help);
}

}  // namespace
}  // namespace ringmaster::operator_cmd
