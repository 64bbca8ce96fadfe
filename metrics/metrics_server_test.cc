#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "metrics/buckets.h"
#include "metrics/family_stream.h"
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

// A FamilyStream of `families` gauges with `series` series each, handed over in batches of `batch` series (so
// the server must join them under one header). Before each batch it checks, when `written_so_far` is set, that
// the server holds back at most a piece of text: everything emitted before, as one serialization, minus what was
// written, is under 20 KiB. Were the server to gather families (or their text), that check would fail.
class SampleStream : public FamilyStream {
 public:
  SampleStream(int families, int series, int batch) : families_(families), series_(series), batch_(batch) {}
  std::function<size_t()> written_so_far;
  mutable size_t most_held_back = 0;

  void CollectEach(const Emit& emit) const override {
    std::vector<prometheus::MetricFamily> emitted;  // gathered, for the check
    for (int f = 0; f < families_; ++f) {
      for (int first = 0; first < series_; first += batch_) {
        if (written_so_far) {
          const size_t produced = prometheus::TextSerializer().Serialize(emitted).size();
          most_held_back = std::max(most_held_back, produced - std::min(produced, written_so_far()));
        }
        prometheus::MetricFamily family{
            "stream_family_" + std::to_string(f), "A streamed family.", prometheus::MetricType::Gauge, {}};
        for (int i = first; i < std::min(series_, first + batch_); ++i) {
          prometheus::ClientMetric m;
          m.label = {{"job", "job-" + std::to_string(i)}};
          m.gauge.value = i + 0.25;
          family.metric.push_back(std::move(m));
        }
        if (!emitted.empty() && emitted.back().name == family.name) {
          emitted.back().metric.insert(emitted.back().metric.end(), family.metric.begin(), family.metric.end());
        } else {
          emitted.push_back(family);
        }
        emit(std::move(family));
      }
    }
  }

 private:
  const int families_, series_, batch_;
};

// prometheus-cpp's own text of every family of `collectables`, gathered: what /metrics served before streaming.
std::string GatheredText(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> all;
  for (const auto& c : collectables) {
    auto f = c->Collect();
    all.insert(all.end(), f.begin(), f.end());
  }
  return prometheus::TextSerializer().Serialize(all);
}

// A FamilyStream's batches are serialized and handed on as they come, one header per family, and the text is
// prometheus-cpp's own for the same families gathered.
TEST(MetricsServerTest, AFamilyStreamIsWrittenAsItComesInBatchesUnderOneHeader) {
  auto stream = std::make_shared<SampleStream>(3, 1000, 100);
  auto registry = SampleRegistry();
  size_t written = 0;
  std::string text;
  stream->written_so_far = [&] { return written; };
  WriteText({registry, stream}, [&](std::string_view piece) {
    written += piece.size();
    text.append(piece);
  });
  EXPECT_LT(stream->most_held_back, 20u * 1024) << "the server held back more than a piece of text";
  stream->written_so_far = nullptr;
  EXPECT_EQ(text, GatheredText({registry, stream}));
  EXPECT_EQ(stream->Collect().size(), 3u) << "Collect joins the batches";
  size_t headers = 0;
  for (size_t at = text.find("# TYPE stream_family_"); at != std::string::npos;
       at = text.find("# TYPE stream_family_", at + 1))
    ++headers;
  EXPECT_EQ(headers, 3u);
  EXPECT_EQ(RenderText({registry, stream}), text);
}

// Over HTTP a large streamed body (several 64 KiB pieces, no Content-Length) arrives whole and exactly as
// RenderText renders it.
TEST(MetricsServerTest, ALargeStreamedScrapeArrivesWhole) {
  auto stream = std::make_shared<SampleStream>(4, 20000, 1000);  // ~3 MB of text
  auto registry = SampleRegistry();                              // held weakly by the server: kept alive here
  MetricsServerOptions o;
  o.bind_address = "127.0.0.1:0";
  o.collectables = {registry, stream};
  auto server = MetricsServer::Start(std::move(o));
  ASSERT_OK(server) << server.status();
  const std::string response = LoopbackHttpGet((*server)->port(), "/metrics", std::chrono::seconds(60));
  ASSERT_TRUE(StartsWith(response, "HTTP/1.1 200")) << response.substr(0, 200);
  const auto body_at = response.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  const std::string body = response.substr(body_at + 4);
  const std::string expected = GatheredText({registry, stream});
  EXPECT_GT(expected.size(), 1000000u);
  EXPECT_EQ(body.size(), expected.size());
  EXPECT_TRUE(body == expected) << "the streamed body differs from RenderText's";
}

// A collectable that throws before anything was written is a 500 naming the failure, not a crash.
class ThrowingStream : public FamilyStream {
 public:
  void CollectEach(const Emit&) const override { throw std::runtime_error("the cache went away"); }
};

TEST(MetricsServerTest, AStreamThatThrowsFirstIsA500) {
  MetricsServerOptions o;
  o.bind_address = "127.0.0.1:0";
  auto throwing = std::make_shared<ThrowingStream>();  // held weakly by the server: kept alive here
  o.collectables = {throwing};
  auto server = MetricsServer::Start(std::move(o));
  ASSERT_OK(server) << server.status();
  const std::string response = LoopbackHttpGet((*server)->port(), "/metrics");
  EXPECT_TRUE(StartsWith(response, "HTTP/1.1 500")) << response;
  EXPECT_NE(response.find("the cache went away"), std::string::npos) << response;
}

TEST(BucketsTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_TRUE(ExponentialBuckets(0, 2, 4).empty());
  EXPECT_TRUE(ExponentialBuckets(1, 1, 4).empty());
}

}  // namespace
}  // namespace ringmaster::metrics
