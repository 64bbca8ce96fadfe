#include "kube/rest_client.h"

#include <algorithm>
#include <random>

#include "kube/api_error.h"
#include "kube/client_metrics.h"

namespace ringmaster::kube {

RestClient::RestClient(std::unique_ptr<Transport> transport, RestClientOptions options)
    : transport_(std::move(transport)), options_(std::move(options)), bucket_(options_.qps, options_.burst) {}

bool RestClient::ShouldRetry(const HttpRequest& request, int code, const std::map<std::string, std::string>& headers,
                             int attempt, Duration* wait) const {
  if (attempt >= options_.retry.max_retries) return false;
  const bool is_get = request.method == "GET";
  bool has_retry_after = false;
  Duration retry_after{};
  if (auto it = headers.find("retry-after"); it != headers.end()) {
    char* end = nullptr;
    long secs = std::strtol(it->second.c_str(), &end, 10);
    if (end != it->second.c_str() && secs >= 0) {
      has_retry_after = true;
      retry_after = std::min<Duration>(std::chrono::seconds(secs), options_.retry.max_retry_after);
    }
  }
  bool retry;
  if (code == 0) {
    retry = is_get;
  } else if (code == 429 || (code >= 500 && code <= 599 && code != 501)) {
    retry = has_retry_after || code == 429 || code == 503 || code == 504 || is_get;
  } else {
    retry = false;
  }
  if (!retry) return false;
  if (has_retry_after && retry_after > Duration::zero()) {
    *wait = retry_after;
  } else {
    auto base = std::chrono::duration_cast<Duration>(options_.retry.initial_backoff) * (1LL << std::min(attempt, 20));
    base = std::min<Duration>(base, options_.retry.max_backoff);
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    *wait = Duration(static_cast<Duration::rep>(double(base.count()) * jitter(rng)));
  }
  return true;
}

template <typename Response, typename Send>
StatusOr<Response> RestClient::SendRetrying(const HttpRequest& request, const Send& send) {
  static const std::map<std::string, std::string> kNoHeaders;
  auto cancelled = [&] { return CancelledError(request.method + " " + request.path + ": the client was cancelled"); };
  HttpRequest sent = request;  // a copy to carry the cancellation: the transport borrows it for the call
  sent.cancellation = &cancellation_;
  for (int attempt = 0;; ++attempt) {
    if (!bucket_.Accept(cancellation_)) return cancelled();
    const auto start = std::chrono::steady_clock::now();
    StatusOr<Response> resp = send(sent);
    const int code = resp.ok() ? resp->code : 0;
    const bool succeeded = resp.ok() && code >= 200 && code < 300;
    // Whatever the transport made of a request cut short (a closed connection), it ends here, unretried and
    // uncounted. A success that raced the cancellation stands: what it wrote was written.
    if (!succeeded && cancellation_.cancelled()) return cancelled();
    if (auto* m = metrics())
      m->ObserveRequest(options_.host, request.method, code, std::chrono::steady_clock::now() - start);
    if (succeeded) return resp;
    Duration wait{};
    if (!ShouldRetry(request, code, resp.ok() ? resp->headers : kNoHeaders, attempt, &wait)) return resp;
    if (auto* m = metrics()) m->ObserveRetry(options_.host, request.method, code);
    if (!cancellation_.SleepFor(wait)) return cancelled();
  }
}

StatusOr<HttpResponse> RestClient::Do(const HttpRequest& request) {
  RINGMASTER_ASSIGN_OR_RETURN(HttpResponse resp, SendRetrying<HttpResponse>(request, [&](const HttpRequest& r) {
                                return transport_->Send(r);
                              }));
  if (resp.code >= 200 && resp.code < 300) return resp;
  return StatusFromHttpResponse(resp.code, resp.body);
}

StatusOr<StreamedResponse> RestClient::Stream(const HttpRequest& request) {
  RINGMASTER_ASSIGN_OR_RETURN(StreamedResponse resp, SendRetrying<StreamedResponse>(request, [&](const HttpRequest& r) {
                                return transport_->Open(r);
                              }));
  if (resp.code >= 200 && resp.code < 300) return resp;
  // Read the (small) error body.
  std::string body;
  char buf[4096];
  while (body.size() < (1u << 20)) {
    auto n = resp.body->Read(buf, sizeof buf);
    if (!n.ok() || *n == 0) break;
    body.append(buf, *n);
  }
  return StatusFromHttpResponse(resp.code, body);
}

StatusOr<std::shared_ptr<RestClient>> NewRestClient(const ClientConfig& config, std::shared_ptr<ClientMetrics> metrics,
                                                    LogSink log) {
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, NewHttpTransport(config, std::move(log)));
  RestClientOptions options;
  options.qps = config.qps;
  options.burst = config.burst;
  options.metrics = std::move(metrics);
  // "https://host:port" -> "host:port"
  const auto scheme = config.server.find("://");
  options.host = scheme == std::string::npos ? config.server : config.server.substr(scheme + 3);
  return std::make_shared<RestClient>(std::move(transport), std::move(options));
}

}  // namespace ringmaster::kube
