#include "metrics/metrics_server.h"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <ostream>
#include <sstream>
#include <streambuf>

#include "metrics/family_stream.h"

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

// The body of /metrics goes out in pieces of about this size (see the header: large scrapes).
constexpr size_t kMetricsChunkBytes = 64 * 1024;

// /metrics. Nothing may escape into civetweb's thread: a collector that throws before the headers went out
// is a 500; after, the body is cut short.
class MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    std::string pending;
    bool started = false;
    auto flush = [&] {
      if (!started) {
        mg_printf(conn,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                  "Connection: close\r\n\r\n");
        started = true;
      }
      if (!pending.empty()) mg_write(conn, pending.data(), pending.size());
      pending.clear();
    };
    try {
      WriteText(collectables_, [&](std::string_view piece) {
        pending.append(piece);
        if (pending.size() >= kMetricsChunkBytes) flush();
      });
      flush();
    } catch (const std::exception& e) {
      if (!started)
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

namespace {

// An output stream buffer that hands its bytes to `write` in pieces of up to kPieceBytes, so the serializer's
// text never accumulates in memory.
class PieceBuffer : public std::streambuf {
 public:
  explicit PieceBuffer(const std::function<void(std::string_view)>& write) : write_(write) {
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  ~PieceBuffer() override = default;
  // Hands over what is buffered.
  int sync() override {
    if (pptr() > pbase()) write_(std::string_view(pbase(), static_cast<size_t>(pptr() - pbase())));
    setp(buffer_, buffer_ + sizeof buffer_);
    return 0;
  }

 protected:
  int_type overflow(int_type c) override {
    sync();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

 private:
  static constexpr size_t kPieceBytes = 16 * 1024;
  const std::function<void(std::string_view)>& write_;
  char buffer_[kPieceBytes];
};

// `text` without its leading "# HELP" and "# TYPE" lines: a later batch of a family already written.
std::string_view WithoutHeader(std::string_view text) {
  while (text.rfind("# HELP ", 0) == 0 || text.rfind("# TYPE ", 0) == 0) {
    const auto eol = text.find('\n');
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  }
  return text;
}

}  // namespace

void WriteText(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables,
               const std::function<void(std::string_view)>& write) {
  const prometheus::TextSerializer serializer;
  PieceBuffer pieces(write);
  std::ostream out(&pieces);
  for (const auto& weak : collectables) {
    auto c = weak.lock();
    if (!c) continue;
    if (const auto* stream = dynamic_cast<const FamilyStream*>(c.get())) {
      std::string last;  // the family the previous batch belonged to
      stream->CollectEach([&](prometheus::MetricFamily family) {
        std::vector<prometheus::MetricFamily> one;
        one.push_back(std::move(family));
        if (one.front().name != last) {
          last = one.front().name;
          serializer.Serialize(out, one);
          return;
        }
        std::ostringstream batch;  // one batch's text, to drop its header
        serializer.Serialize(batch, one);
        const std::string_view series = WithoutHeader(batch.view());
        out.write(series.data(), static_cast<std::streamsize>(series.size()));
      });
    } else {
      const auto families = c->Collect();
      if (!families.empty()) serializer.Serialize(out, families);
    }
  }
  out.flush();
}

std::string RenderText(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
  std::string out;
  WriteText(collectables, [&](std::string_view piece) { out.append(piece); });
  return out;
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
