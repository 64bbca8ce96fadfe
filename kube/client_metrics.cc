#include "kube/client_metrics.h"

namespace ringmaster::kube {

namespace {
std::string CodeLabel(int code) { return code == 0 ? "<error>" : std::to_string(code); }
const std::vector<double>& QueueBuckets() {
  static const std::vector<double> b = metrics::ExponentialBuckets(1e-6, 10, 10);  // 1µs .. 1000s
  return b;
}
}  // namespace

ClientMetrics::ClientMetrics(metrics::Registry* r)
    : requests_(r->AddCounterFamily("rest_client_requests_total", "Number of HTTP requests, by verb, resource and code.")),
      latency_(r->AddHistogramFamily("rest_client_request_duration_seconds", "Request latency in seconds, by verb and resource.")),
      retries_(r->AddCounterFamily("rest_client_request_retries_total", "Number of request retries, by verb, resource and code.")),
      watch_restarts_(r->AddCounterFamily("ringmaster_watch_restarts_total", "Watches re-established, by resource and reason.")),
      queue_depth_(r->AddGaugeFamily("workqueue_depth", "Current depth of the workqueue.")),
      queue_adds_(r->AddCounterFamily("workqueue_adds_total", "Total number of adds handled by the workqueue.")),
      queue_latency_(r->AddHistogramFamily("workqueue_queue_duration_seconds", "Seconds an item stays in the workqueue before being requested.")),
      work_duration_(r->AddHistogramFamily("workqueue_work_duration_seconds", "Seconds processing an item from the workqueue takes.")),
      queue_retries_(r->AddCounterFamily("workqueue_retries_total", "Total number of rate-limited retries handled by the workqueue.")) {}

void ClientMetrics::ObserveRequest(const std::string& verb, const std::string& resource, int code,
                                   std::chrono::nanoseconds latency) {
  requests_.Add({{"verb", verb}, {"resource", resource}, {"code", CodeLabel(code)}}).Increment();
  latency_.Add({{"verb", verb}, {"resource", resource}}).Observe(std::chrono::duration<double>(latency).count());
}

void ClientMetrics::ObserveRetry(const std::string& verb, const std::string& resource, int code) {
  retries_.Add({{"verb", verb}, {"resource", resource}, {"code", CodeLabel(code)}}).Increment();
}

void ClientMetrics::ObserveWatchRestart(const std::string& resource, const std::string& reason) {
  watch_restarts_.Add({{"resource", resource}, {"reason", reason}}).Increment();
}

metrics::Gauge& ClientMetrics::QueueDepth(const std::string& q) { return queue_depth_.Add({{"name", q}}); }
metrics::Counter& ClientMetrics::QueueAdds(const std::string& q) { return queue_adds_.Add({{"name", q}}); }
metrics::Histogram& ClientMetrics::QueueLatency(const std::string& q) { return queue_latency_.Add({{"name", q}}, QueueBuckets()); }
metrics::Histogram& ClientMetrics::WorkDuration(const std::string& q) { return work_duration_.Add({{"name", q}}, QueueBuckets()); }
metrics::Counter& ClientMetrics::QueueRetries(const std::string& q) { return queue_retries_.Add({{"name", q}}); }

}  // namespace ringmaster::kube
