// ringmaster-operator's shutdown when the apiserver has gone silent (issue 33): SIGTERM must end the process with
// status 0 well within a pod's grace period, after a bounded drain, having cancelled what was still in flight and
// said so -- not retry against the dead apiserver until the kubelet's SIGKILL (which loses the lease's release and
// the last log lines).
//
// The operator reaches the shared test cluster through a proxy of the test's own (support/tcp_proxy.h), which
// then goes silent: connections hang, nothing is answered, as with a hung or partitioned apiserver. The cluster
// itself is not disturbed, so this test runs beside the others.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "tests/support/background_process.h"
#include "tests/support/cluster_test.h"
#include "tests/support/tcp_proxy.h"

namespace ringmaster::testing {
namespace {

using std::chrono::seconds;

class OperatorShutdownTest : public JobTest {
 protected:
  OperatorShutdownTest() : JobTest("shutdown") {}

  void TearDown() override {
    if (HasFailure()) std::cerr << "---- operator log ----\n" << operator_.Log() << "\n";
    operator_.Stop(seconds(5));
    ClusterTest::TearDown();
  }

  // The cluster's kubeconfig with its server replaced by the proxy's address (same CA and client certificate:
  // the apiserver's certificate names 127.0.0.1). Returns its path; "" after a failure.
  std::string KubeconfigVia(const TcpProxy& proxy) {
    std::ifstream in(cluster_.kubeconfig());
    std::stringstream text;
    text << in.rdbuf();
    std::string config = text.str();
    const std::string server = cluster_.server();
    const size_t at = config.find("server: " + server);
    EXPECT_NE(at, std::string::npos) << "the kubeconfig does not name " << server;
    if (at == std::string::npos) return "";
    config.replace(at, 8 + server.size(), "server: https://127.0.0.1:" + std::to_string(proxy.port()));
    const std::string path = ::testing::TempDir() + ns_ + "-via-proxy.kubeconfig";
    std::ofstream(path) << config;
    return path;
  }

  // The worker pods of `job` that exist now (read through the real apiserver, not the proxy).
  int WorkerPods(const std::string& job) {
    auto pods = cluster_.KubectlJson({"get", "pods", "-n", ns_, "-l", std::string(api::kJobNameLabel) + "=" + job});
    return pods.ok() ? static_cast<int>((*pods)["items"].size()) : 0;
  }

  BackgroundProcess operator_;
};

// A reconcile is creating 30 worker pods at one request per second (--kube-api-qps=1) when the apiserver goes
// silent and SIGTERM comes: the reconcile is waiting on the client's rate limiter or blocked on a connection that
// never answers (each request would hang for the client's 30 s timeout). With --shutdown-timeout=3s it is cancelled
// after 3 s, the leader election's release of the lease is cut short too, and the process exits 0.
// The 90 s bound is against hanging, not a speed check: the shutdown's own bounds add up to some 13 s; without
// them the remaining 29 creates would take about 15 minutes.
TEST_F(OperatorShutdownTest, SigtermWhileTheApiserverIsSilentExitsZeroAndSaysWhatItCancelled) {
  auto proxy = TcpProxy::Start("127.0.0.1", std::stoi(cluster_.server().substr(cluster_.server().rfind(':') + 1)));
  ASSERT_OK(proxy) << proxy.status();
  const std::string kubeconfig = KubeconfigVia(**proxy);
  ASSERT_FALSE(kubeconfig.empty());
  ApplyJob("big", "  replicas: {min: 30, max: 30}\n");
  ASSERT_FALSE(HasFailure());

  const std::string log = ::testing::TempDir() + ns_ + "-operator.log";
  ASSERT_OK(operator_.Start(
      {RINGMASTER_OPERATOR_BIN, "--kubeconfig", kubeconfig, "--namespace", ns_, "--metrics-bind-address=0",
       "--health-probe-bind-address=0", "--leader-elect", "--leader-election-namespace", ns_, "--kube-api-qps=1",
       "--kube-api-burst=1", "--shutdown-timeout=3s", "--worker-network-policy=false"},
      log));
  // The first pods exist: the reconcile that creates the other ones, a second apart, is under way.
  ASSERT_OK(WaitFor("the job's first worker pods", seconds(120), [&](std::string* last) {
    const int pods = WorkerPods("big");
    *last = std::to_string(pods) + " pods";
    return pods >= 2;
  }));
  ASSERT_LT(WorkerPods("big"), 30) << "the reconcile ended before the apiserver went silent";

  (*proxy)->Freeze();
  const int code = operator_.Stop(seconds(90));  // SIGTERM, then SIGKILL (exit code 137) after 90 s
  const std::string out = operator_.Log();
  EXPECT_EQ(code, 0) << "the operator did not exit by itself within 90 s of SIGTERM";
  EXPECT_NE(out.find("received SIGTERM; shutting down"), std::string::npos);
  EXPECT_NE(out.find("shutdown: 1 reconcile still in flight after 3 s; cancelled"), std::string::npos)
      << "the shutdown did not say what it abandoned";
  EXPECT_NE(out.find("stopped"), std::string::npos) << "the last line was not logged";
}

}  // namespace
}  // namespace ringmaster::testing
