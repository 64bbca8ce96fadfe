// A tiny HTTP/1.1 server for /metrics, /healthz and /readyz (one request per connection, GET only).
//
// Thread-safety: Start/Stop from one thread; handlers run on the server's thread and must be thread-safe.
// Errors: Start returns kInvalidArgument for a malformed address, kUnavailable when bind/listen fail.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "base/status.h"
#include "metrics/metrics.h"

namespace ringmaster::metrics {

struct HttpReply {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply()>;
  HttpServer() = default;
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers `handler` for exact `path`. Call before Start().
  void Handle(const std::string& path, Handler handler);
  // Serves `registry` on /metrics (the registry must outlive the server).
  void HandleMetrics(const Registry* registry);
  // /healthz or /readyz style: 200 "ok" when check() is true, else 503.
  void HandleCheck(const std::string& path, std::function<bool()> check);

  // Binds "host:port" (port 0 picks a free one) and starts serving on a thread.
  Status Start(const std::string& bind_address);
  // The bound port (after Start).
  int port() const { return port_; }
  void Stop();

 private:
  void Serve();
  void HandleConnection(int fd);

  // Constant after Start().
  std::map<std::string, Handler> handlers_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace ringmaster::metrics
