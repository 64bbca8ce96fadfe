// The client's metrics (client-go's names where it has them), registered in a metrics::Registry.
// Thread-safety: thread-safe. The Registry must outlive this object.
#pragma once

#include <chrono>
#include <string>

#include "metrics/metrics.h"

namespace ringmaster::kube {

class ClientMetrics {
 public:
  explicit ClientMetrics(metrics::Registry* registry);

  // code 0: no HTTP answer (recorded as code "<error>").
  void ObserveRequest(const std::string& verb, const std::string& resource, int code, std::chrono::nanoseconds latency);
  void ObserveRetry(const std::string& verb, const std::string& resource, int code);
  void ObserveWatchRestart(const std::string& resource, const std::string& reason);
  // Workqueue metrics, by queue name.
  metrics::Gauge& QueueDepth(const std::string& queue);
  metrics::Counter& QueueAdds(const std::string& queue);
  metrics::Histogram& QueueLatency(const std::string& queue);  // seconds from Add to Get
  metrics::Histogram& WorkDuration(const std::string& queue);  // seconds from Get to Done
  metrics::Counter& QueueRetries(const std::string& queue);

 private:
  metrics::Family<metrics::Counter>& requests_;
  metrics::Family<metrics::Histogram>& latency_;
  metrics::Family<metrics::Counter>& retries_;
  metrics::Family<metrics::Counter>& watch_restarts_;
  metrics::Family<metrics::Gauge>& queue_depth_;
  metrics::Family<metrics::Counter>& queue_adds_;
  metrics::Family<metrics::Histogram>& queue_latency_;
  metrics::Family<metrics::Histogram>& work_duration_;
  metrics::Family<metrics::Counter>& queue_retries_;
};

}  // namespace ringmaster::kube
