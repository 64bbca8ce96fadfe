// RestClient: the one place that applies client-side flow control (QPS/burst) and the retry rule to
// every request sent to the apiserver, and turns non-2xx answers into Status (see api_error.h).
//
// Retry rule (client-go's, in one place): a 429 or 5xx answer is retried when it carries Retry-After
// (honoured, capped at RetryPolicy::max_retry_after) and, without Retry-After, when it is 429/503/504
// or the request is a GET; a request that got no HTTP answer is retried only when it is a GET.
// Waits between attempts back off exponentially with jitter. After max_retries the last error is returned.
// Cancel() ends it all (a process shutting down): a request waiting for a token, sleeping out a backoff or
// blocked in the transport returns kCancelled at once, and later requests return kCancelled unsent.
// Thread-safety: thread-safe. Ownership: owns its Transport.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "kube/cancellation.h"
#include "kube/rate_limiter.h"
#include "kube/transport.h"

namespace ringmaster::kube {

class ClientMetrics;

struct RetryPolicy {
  int max_retries = 5;
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds max_retry_after{30000};
};

struct RestClientOptions {
  double qps = 50;  // <= 0: no client-side limit
  int burst = 100;
  RetryPolicy retry;
  std::shared_ptr<ClientMetrics> metrics;  // optional
  std::string host;                        // the apiserver's host:port, the metrics' host label
};

class RestClient {
 public:
  RestClient(std::unique_ptr<Transport> transport, RestClientOptions options);

  // Sends `request` under the retry rule. Returns the 2xx response, or the Status of the last failure
  // (carrying the HTTP code and reason; kUnavailable when no answer came).
  StatusOr<HttpResponse> Do(const HttpRequest& request);

  // Opens a streamed response (a watch) under the same rule for its opening; a non-2xx answer's body
  // is read and returned as a Status.
  StatusOr<StreamedResponse> Stream(const HttpRequest& request);

  // Cancels every request in flight and every later one (kCancelled); never undone. Idempotent.
  void Cancel() { cancellation_.Cancel(); }
  bool cancelled() const { return cancellation_.cancelled(); }

  ClientMetrics* metrics() const { return options_.metrics.get(); }

 private:
  // Decides whether attempt `attempt` (0-based) that failed with `code`/`headers` is retried, and how
  // long to wait first. code 0: no HTTP answer.
  bool ShouldRetry(const HttpRequest& request, int code, const std::map<std::string, std::string>& headers, int attempt,
                   Duration* wait) const;
  // The one retry loop of Do and Stream: flow control, metrics, retries by ShouldRetry. Returns the
  // last response (2xx, or an error answer the caller turns into a Status) or the transport error;
  // kCancelled once Cancel() was called. `send` gets the request with this client's cancellation set.
  template <typename Response, typename Send>
  StatusOr<Response> SendRetrying(const HttpRequest& request, const Send& send);

  // Constant after construction.
  const std::unique_ptr<Transport> transport_;
  const RestClientOptions options_;
  TokenBucket bucket_;         // thread-safe
  Cancellation cancellation_;  // thread-safe
};

// Builds a RestClient for `config` with the cpprestsdk transport (qps/burst taken from the config).
StatusOr<std::shared_ptr<RestClient>> NewRestClient(const ClientConfig& config,
                                                    std::shared_ptr<ClientMetrics> metrics = nullptr,
                                                    LogSink log = StderrLogSink("ringmaster-kube"));

}  // namespace ringmaster::kube
