#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "metrics/http_server.h"
#include "metrics/loopback_http_get.h"
#include "base/status_test_macros.h"

namespace ringmaster::metrics {
namespace {

TEST(MetricsTest, RendersCountersAndGaugesInExpositionFormat) {
  Registry r;
  auto& c = r.AddCounterFamily("requests_total", "Requests.\nSecond line with \\ backslash.");
  c.Add({{"code", "200"}, {"verb", "get"}}).Increment();
  c.Add({{"code", "200"}, {"verb", "get"}}).Increment(2);
  c.Add({{"verb", "we\"ird\\va\nlue"}}).Increment();
  c.Add({}).Increment(-5);  // ignored: counters only go up
  auto& g = r.AddGaugeFamily("depth", "Depth");
  g.Add({}).Set(1.5);
  g.Add({}).Decrement(3);
  EXPECT_EQ(r.Render(),
            "# HELP requests_total Requests.\\nSecond line with \\\\ backslash.\n"
            "# TYPE requests_total counter\n"
            "requests_total 0\n"
            "requests_total{code=\"200\",verb=\"get\"} 3\n"
            "requests_total{verb=\"we\\\"ird\\\\va\\nlue\"} 1\n"
            "# HELP depth Depth\n"
            "# TYPE depth gauge\n"
            "depth -1.5\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInf) {
  Registry r;
  auto& h = r.AddHistogramFamily("latency_seconds", "Latency.");
  auto& m = h.Add({{"verb", "get"}}, {0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) m.Observe(v);
  EXPECT_EQ(r.Render(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{verb=\"get\",le=\"0.1\"} 2\n"
            "latency_seconds_bucket{verb=\"get\",le=\"1\"} 3\n"
            "latency_seconds_bucket{verb=\"get\",le=\"10\"} 4\n"
            "latency_seconds_bucket{verb=\"get\",le=\"+Inf\"} 5\n"
            "latency_seconds_sum{verb=\"get\"} 55.65\n"
            "latency_seconds_count{verb=\"get\"} 5\n");
}

TEST(MetricsTest, FormatsSpecialValuesAndNames) {
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(SanitizeName("rest-client.requests"), "rest_client_requests");
  EXPECT_EQ(SanitizeName("9lives"), "_lives");
}

TEST(MetricsTest, SameNameReturnsSameFamily) {
  Registry r;
  auto& a = r.AddCounterFamily("x_total", "X");
  auto& b = r.AddCounterFamily("x_total", "X");
  EXPECT_EQ(&a, &b);
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  Registry r;
  auto& c = r.AddCounterFamily("c_total", "C");
  auto& h = r.AddHistogramFamily("h", "H");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.Add({{"t", std::to_string(i % 2)}}).Increment();
        h.Add({}).Observe(0.001);
        if (i % 1000 == 0) (void)r.Render();
      }
      (void)t;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Add({{"t", "0"}}).Value() + c.Add({{"t", "1"}}).Value(), 40000);
  EXPECT_EQ(h.Add({}).Collect().count, 40000u);
}

TEST(HttpServerTest, ServesMetricsHealthAndReadiness) {
  Registry r;
  r.AddCounterFamily("hits_total", "Hits").Add({}).Increment(7);
  std::atomic<bool> ready{false};
  HttpServer server;
  server.HandleMetrics(&r);
  server.HandleCheck("/healthz", [] { return true; });
  server.HandleCheck("/readyz", [&] { return ready.load(); });
  ASSERT_OK(server.Start("127.0.0.1:0"));
  ASSERT_GT(server.port(), 0);
  std::string m = LoopbackHttpGet(server.port(), "/metrics");
  EXPECT_EQ(m.rfind("HTTP/1.1 200", 0), 0u) << m;
  EXPECT_NE(m.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(m.find("\r\n\r\n# HELP hits_total Hits\n# TYPE hits_total counter\nhits_total 7\n"), std::string::npos) << m;
  EXPECT_EQ(LoopbackHttpGet(server.port(), "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(LoopbackHttpGet(server.port(), "/readyz").rfind("HTTP/1.1 503", 0), 0u);
  ready = true;
  EXPECT_EQ(LoopbackHttpGet(server.port(), "/readyz").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(LoopbackHttpGet(server.port(), "/nope").rfind("HTTP/1.1 404", 0), 0u);
  server.Stop();
}

TEST(HttpServerTest, BadAddressIsInvalidArgument) {
  HttpServer server;
  EXPECT_EQ(server.Start("localhost").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.Start("not-an-ip:80").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::metrics
