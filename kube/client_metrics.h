// The client's Prometheus metrics under client-go's and controller-runtime's names, in a
// prometheus::Registry:
//   rest_client_requests_total{code,method,host}               counter (code "<error>": no HTTP answer)
//   rest_client_request_duration_seconds{verb,host}            histogram
//   rest_client_request_retries_total{code,verb,host}          counter
//   ringmaster_watch_restarts_total{resource,reason}           counter
//   workqueue_depth{name}                                      gauge
//   workqueue_adds_total{name}                                 counter
//   workqueue_queue_duration_seconds{name}                     histogram: from Add to Get
//   workqueue_work_duration_seconds{name}                      histogram: from Get to Done
//   workqueue_retries_total{name}                              counter
// Thread-safety: thread-safe. Ownership: borrows the registry, which must outlive this object; the
// references the queue accessors return live as long as the registry.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>

namespace ringmaster::kube {

class ClientMetrics {
 public:
  explicit ClientMetrics(prometheus::Registry& registry);

  // `host`: the apiserver's host:port; `method`: GET, POST, ...; code 0: no HTTP answer.
  void ObserveRequest(const std::string& host, const std::string& method, int code, std::chrono::nanoseconds latency);
  void ObserveRetry(const std::string& host, const std::string& method, int code);
  // reason: timeout (the server ended the watch), gone (resourceVersion expired: relisted), error.
  void ObserveWatchRestart(const std::string& resource, const std::string& reason);
  // Creates `resource`'s watch-restart series at 0, so they exist before the first restart.
  void DeclareWatch(const std::string& resource);
  // Workqueue metrics, by queue name.
  prometheus::Gauge& QueueDepth(const std::string& queue);
  prometheus::Counter& QueueAdds(const std::string& queue);
  prometheus::Histogram& QueueLatency(const std::string& queue);
  prometheus::Histogram& WorkDuration(const std::string& queue);
  prometheus::Counter& QueueRetries(const std::string& queue);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Counter>& watch_restarts_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Counter>& queue_adds_;
  prometheus::Family<prometheus::Histogram>& queue_latency_;
  prometheus::Family<prometheus::Histogram>& work_duration_;
  prometheus::Family<prometheus::Counter>& queue_retries_;
};

}  // namespace ringmaster::kube
