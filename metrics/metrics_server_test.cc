#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "base/status_test_macros.h"
#include "metrics/buckets.h"
#include "metrics/loopback_http_get.h"

namespace ringmaster::metrics {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::shared_ptr<prometheus::Registry> SampleRegistry() {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("sample_requests_total")
      .Help("Requests.")
      .Register(*registry)
      .Add({{"code", "200"}})
      .Increment(3);
  prometheus::BuildGauge().Name("sample_depth").Help("Depth.").Register(*registry).Add({}).Set(1.5);
  prometheus::BuildHistogram()
      .Name("sample_duration_seconds")
      .Help("Duration.")
      .Register(*registry)
      .Add({}, ExponentialBuckets(0.001, 10, 4))
      .Observe(0.05);
  return registry;
}

TEST(MetricsServerTest, ServesTheRegistryAndTheChecks) {
  auto registry = SampleRegistry();
  std::atomic<bool> ready{false};
  MetricsServerOptions o;
  o.bind_address = "127.0.0.1:0";
  o.collectables = {registry};
  o.checks = {{"/healthz", [] { return true; }}, {"/readyz", [&] { return ready.load(); }}};
  auto server = MetricsServer::Start(std::move(o));
  ASSERT_OK(server) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);

  std::string metrics = LoopbackHttpGet(port, "/metrics");
  EXPECT_TRUE(StartsWith(metrics, "HTTP/1.1 200")) << metrics;
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sample_requests_total{code=\"200\"} 3"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sample_duration_seconds_bucket{le=\"0.1\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sample_duration_seconds_bucket{le=\"+Inf\"} 1"), std::string::npos) << metrics;

  EXPECT_TRUE(StartsWith(LoopbackHttpGet(port, "/healthz"), "HTTP/1.1 200")) << LoopbackHttpGet(port, "/healthz");
  EXPECT_TRUE(StartsWith(LoopbackHttpGet(port, "/readyz"), "HTTP/1.1 503")) << LoopbackHttpGet(port, "/readyz");
  ready = true;
  EXPECT_TRUE(StartsWith(LoopbackHttpGet(port, "/readyz"), "HTTP/1.1 200"));
  EXPECT_TRUE(StartsWith(LoopbackHttpGet(port, "/elsewhere"), "HTTP/1.1 404")) << LoopbackHttpGet(port, "/elsewhere");
}

TEST(MetricsServerTest, TheTextPassesPromtool) {
  const std::string text = RenderText({SampleRegistry()});
  const std::string file = ::testing::TempDir() + "metrics_server_test.prom";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fwrite(text.data(), 1, text.size(), f);
  fclose(f);
  ASSERT_EQ(std::system("command -v promtool >/dev/null"), 0)
      << "promtool is not installed: run make deps (Debian package prometheus)";
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << text;
}

// A client that connects and sends nothing (or several) holds a serving thread each; the probes still
// answer. The server's request timeout is an hour, so were they stuck behind a silent client, the probe
// would get no answer at all within its 20 s.
TEST(MetricsServerTest, SilentClientsDoNotHoldUpTheProbes) {
  MetricsServerOptions o;
  o.bind_address = "127.0.0.1:0";
  o.collectables = {SampleRegistry()};
  o.checks = {{"/healthz", [] { return true; }}};
  o.threads = 4;
  o.request_timeout = std::chrono::hours(1);
  auto server = MetricsServer::Start(std::move(o));
  ASSERT_OK(server) << server.status();
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {  // threads - 1
    int fd = OpenSilentConnection((*server)->port());
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
    std::string health = LoopbackHttpGet((*server)->port(), "/healthz", std::chrono::seconds(20));
    EXPECT_TRUE(StartsWith(health, "HTTP/1.1 200")) << "with " << silent.size() << " silent clients: " << health;
    std::string metrics = LoopbackHttpGet((*server)->port(), "/metrics", std::chrono::seconds(20));
    EXPECT_TRUE(StartsWith(metrics, "HTTP/1.1 200")) << "with " << silent.size() << " silent clients: " << metrics;
  }
  for (int fd : silent) close(fd);
}

TEST(MetricsServerTest, BadAddressesAndTakenPortsAreErrorsNotExceptions) {
  for (const char* bad : {"nonsense", "127.0.0.1:http", "127.0.0.1:70000", "localhost:0"}) {
    MetricsServerOptions o;
    o.bind_address = bad;
    auto server = MetricsServer::Start(std::move(o));
    EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument) << bad << ": " << server.status();
  }
  MetricsServerOptions first;
  first.bind_address = "127.0.0.1:0";
  first.checks = {{"/healthz", [] { return true; }}};
  auto taken = MetricsServer::Start(std::move(first));
  ASSERT_OK(taken) << taken.status();
  MetricsServerOptions second;
  second.bind_address = "127.0.0.1:" + std::to_string((*taken)->port());
  auto refused = MetricsServer::Start(std::move(second));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
}

TEST(BucketsTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_TRUE(ExponentialBuckets(0, 2, 4).empty());
  EXPECT_TRUE(ExponentialBuckets(1, 1, 4).empty());
}

}  // namespace
}  // namespace ringmaster::metrics
