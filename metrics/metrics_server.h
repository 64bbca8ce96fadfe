// MetricsServer: a process's Prometheus endpoint and probes over HTTP. /metrics is the text exposition
// format (prometheus-cpp's TextSerializer) of every given prometheus::Collectable, collected when
// scraped; each check path (/healthz, /readyz) answers 200 "ok" or 503 "not ok". Built on civetweb, the
// embedded server prometheus-cpp's Exposer runs on; not the Exposer itself, because it can only serve
// collectables, and a worker's readiness probe (503 until ready) shares the port Prometheus scrapes.
//
//   auto registry = std::make_shared<prometheus::Registry>();
//   MetricsServerOptions o;
//   o.bind_address = "0.0.0.0:29600";
//   o.collectables = {registry};
//   o.checks = {{"/healthz", [] { return true; }}, {"/readyz", [&] { return ready.load(); }}};
//   StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start(std::move(o));
//
// Large scrapes: a collectable that is a metrics::FamilyStream (family_stream.h) is collected, serialized and
// written one family at a time, and the body goes out in pieces as it is produced (no Content-Length: the
// connection's close ends it), so a scrape's memory is one family's, not every series'. A collectable that
// throws before anything was sent makes the scrape a 500; one that throws after the first piece went out
// cuts the body short (Prometheus reports the scrape as failed).
//
// Slow clients: requests are served by `threads` threads, each request by one of them, and a connection
// that sends nothing holds its thread for at most `request_timeout`. So up to threads - 1 stuck clients
// delay no other request (a probe included); more than that wait for a free thread. Keep-alive is off.
//
// Thread-safety: the server serves from its own threads; collectables are collected and checks called
// there, so both must be thread-safe. Ownership: collectables are held weakly (one that is gone is
// skipped); checks are owned; the destructor stops serving and joins the threads.
// Errors: Start returns InvalidArgument for a bind address that is not IPv4 "host:port" (host may be
// empty or "*" for every address), Unavailable when the port cannot be bound. Nothing here throws.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace ringmaster::metrics {

struct MetricsServerOptions {
  std::string bind_address;                                          // "host:port"; port 0 picks a free one
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables;  // served on /metrics; none: no /metrics
  std::map<std::string, std::function<bool()>> checks;               // path -> check
  int threads = 4;
  std::chrono::milliseconds request_timeout{10000};
};

class MetricsServer {
 public:
  static StatusOr<std::unique_ptr<MetricsServer>> Start(MetricsServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound port.
  int port() const { return port_; }

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl, int port);

  const std::unique_ptr<Impl> impl_;
  const int port_;
};

// The text exposition format (0.0.4) of `collectables`' families, as /metrics serves it. For tests and
// benchmarks that read the text without HTTP. Errors: none (a collectable that is gone is skipped).
std::string RenderText(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables);
// The same text handed to `write` in pieces: each plain collectable's families at once, a FamilyStream's one
// family at a time. Exceptions from a collectable propagate (after the pieces already written).
void WriteText(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables,
               const std::function<void(std::string_view)>& write);

}  // namespace ringmaster::metrics
