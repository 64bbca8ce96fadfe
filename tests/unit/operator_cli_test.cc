// ringmaster-operator refuses bad input with one clear line and a non-zero exit, never a crash or hang.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/status_test_macros.h"
#include "tests/support/subprocess.h"

namespace ringmaster::testing {
namespace {

using std::chrono::seconds;

CommandResult RunOperator(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {RINGMASTER_OPERATOR_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunCommand(argv, seconds(20));
  EXPECT_OK(r) << r.status();  // DeadlineExceeded here would mean it hung
  return r.ok() ? *r : CommandResult{};
}

std::string WriteFile(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << content;
  return path;
}

TEST(OperatorCliTest, HelpExplainsItselfAndExitsZero) {
  CommandResult r = RunOperator({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--leader-elect"), std::string::npos);
}

TEST(OperatorCliTest, UnknownFlagIsRefused) {
  CommandResult r = RunOperator({"--replicas", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--replicas"), std::string::npos) << r.err;
}

TEST(OperatorCliTest, MissingKubeconfigNamesTheFile) {
  CommandResult r = RunOperator({"--kubeconfig", "/nonexistent/ringmaster.kubeconfig"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/ringmaster.kubeconfig"), std::string::npos) << r.err;
}

TEST(OperatorCliTest, MalformedKubeconfigSaysWhatIsWrong) {
  CommandResult r = RunOperator({"--kubeconfig", WriteFile("garbled.kubeconfig", "clusters: [oops")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("InvalidArgument"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("garbled.kubeconfig"), std::string::npos) << r.err;
}

TEST(OperatorCliTest, KubeconfigWithoutTheContextSaysWhichIsMissing) {
  CommandResult r = RunOperator(
      {"--kubeconfig", WriteFile("nocontext.kubeconfig",
                                 "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\ncurrent-context: prod\n")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("context \"prod\" not found"), std::string::npos) << r.err;
}

TEST(OperatorCliTest, TakenMetricsPortIsReported) {
  // A listener holds a port (in the background of the same shell); the operator is asked for it.
  auto r = RunCommand({"sh", "-c",
                       "python3 -c \"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
                       "open('" +
                           ::testing::TempDir() +
                           "port','w').write(str(s.getsockname()[1])); time.sleep(15)\" & "
                           "sleep 1; PORT=$(cat " +
                           ::testing::TempDir() + "port); " + RINGMASTER_OPERATOR_BIN + " --kubeconfig " +
                           WriteFile("ok.kubeconfig",
                                     "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
                                     "'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\n"
                                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n") +
                           " --metrics-bind-address 127.0.0.1:$PORT; echo rc=$?; kill $!"},
                      seconds(30));
  ASSERT_OK(r) << r.status();
  EXPECT_NE(r->out.find("rc=1"), std::string::npos) << r->out << r->err;
  EXPECT_NE(r->err.find("cannot serve metrics on 127.0.0.1:"), std::string::npos) << r->err;
}

}  // namespace
}  // namespace ringmaster::testing
