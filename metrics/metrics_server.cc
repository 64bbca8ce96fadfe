#include "metrics/metrics_server.h"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <exception>

namespace ringmaster::metrics {

namespace {

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
  }
}

void Reply(mg_connection* conn, int code, const char* content_type, const std::string& body) {
  mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", code,
            Reason(code), content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

// /metrics. Nothing may escape into civetweb's thread: a throwing collector is a 500.
class MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    try {
      Reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", RenderText(collectables_));
    } catch (const std::exception& e) {
      Reply(conn, 500, "text/plain; charset=utf-8", std::string("collecting metrics failed: ") + e.what() + "\n");
    }
    return true;
  }

 private:
  const std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
};

class CheckHandler : public CivetHandler {
 public:
  explicit CheckHandler(std::function<bool()> check) : check_(std::move(check)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    bool ok = false;
    try {
      ok = check_();
    } catch (...) {}
    Reply(conn, ok ? 200 : 503, "text/plain; charset=utf-8", ok ? "ok\n" : "not ok\n");
    return true;
  }

 private:
  const std::function<bool()> check_;
};

// civetweb's listening_ports value for "host:port": "port" for every address, "a.b.c.d:port" otherwise.
StatusOr<std::string> ListeningPort(const std::string& bind_address) {
  const auto colon = bind_address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("bind address \"" + bind_address + "\" is not host:port");
  const std::string host = bind_address.substr(0, colon), port = bind_address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return InvalidArgumentError("bind address \"" + bind_address + "\" has no port number 0..65535");
  }
  if (host.empty() || host == "*" || host == "0.0.0.0") return port;
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) != 1) {
    return InvalidArgumentError("bind address \"" + bind_address + "\": host is not an IPv4 address");
  }
  return host + ":" + port;
}

}  // namespace

struct MetricsServer::Impl {
  // Declared first so they outlive the server, which calls them until it is destroyed (first).
  std::vector<std::unique_ptr<CivetHandler>> handlers;
  std::unique_ptr<CivetServer> server;
};

std::string RenderText(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& weak : collectables) {
    if (auto c = weak.lock()) {
      auto collected = c->Collect();
      families.insert(families.end(), std::make_move_iterator(collected.begin()),
                      std::make_move_iterator(collected.end()));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(MetricsServerOptions options) {
  RINGMASTER_ASSIGN_OR_RETURN(std::string listening, ListeningPort(options.bind_address));
  if (options.threads < 1) return InvalidArgumentError("metrics server: threads must be >= 1");
  auto impl = std::make_unique<Impl>();
  const std::vector<std::string> civet_options = {"listening_ports",    listening,
                                                  "num_threads",        std::to_string(options.threads),
                                                  "request_timeout_ms", std::to_string(options.request_timeout.count()),
                                                  "enable_keep_alive",  "no"};
  try {
    impl->server = std::make_unique<CivetServer>(civet_options);
  } catch (const std::exception& e) {
    return UnavailableError("cannot serve on " + options.bind_address + ": " + e.what());
  }
  if (!options.collectables.empty()) {
    impl->handlers.push_back(std::make_unique<MetricsHandler>(std::move(options.collectables)));
    impl->server->addHandler("/metrics", impl->handlers.back().get());
  }
  for (auto& [path, check] : options.checks) {
    impl->handlers.push_back(std::make_unique<CheckHandler>(std::move(check)));
    impl->server->addHandler(path, impl->handlers.back().get());
  }
  std::vector<int> ports = impl->server->getListeningPorts();
  if (ports.empty()) return UnavailableError("cannot serve on " + options.bind_address + ": no listening port");
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl), ports.front()));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl, int port) : impl_(std::move(impl)), port_(port) {}

MetricsServer::~MetricsServer() {
  if (impl_ && impl_->server) impl_->server->close();  // joins civetweb's threads before the handlers go
}

}  // namespace ringmaster::metrics
