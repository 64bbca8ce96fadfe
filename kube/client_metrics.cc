#include "kube/client_metrics.h"

#include "metrics/buckets.h"

namespace ringmaster::kube {

namespace {

std::string CodeLabel(int code) { return code == 0 ? "<error>" : std::to_string(code); }

// client-go's buckets.
const prometheus::Histogram::BucketBoundaries& RequestBuckets() {
  static const prometheus::Histogram::BucketBoundaries b = {0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60};
  return b;
}
const prometheus::Histogram::BucketBoundaries& QueueBuckets() {
  static const prometheus::Histogram::BucketBoundaries b =
      metrics::ExponentialBuckets(1e-8, 10, 12);  // 10 ns .. 1000 s
  return b;
}

}  // namespace

ClientMetrics::ClientMetrics(prometheus::Registry& r)
    : requests_(prometheus::BuildCounter()
                    .Name("rest_client_requests_total")
                    .Help("Number of HTTP requests, partitioned by status code, method, and host.")
                    .Register(r)),
      latency_(prometheus::BuildHistogram()
                   .Name("rest_client_request_duration_seconds")
                   .Help("Request latency in seconds. Broken down by verb, and host.")
                   .Register(r)),
      retries_(prometheus::BuildCounter()
                   .Name("rest_client_request_retries_total")
                   .Help("Number of request retries, partitioned by status code, verb, and host.")
                   .Register(r)),
      watch_restarts_(prometheus::BuildCounter()
                          .Name("ringmaster_watch_restarts_total")
                          .Help("Watches re-established, by resource and reason.")
                          .Register(r)),
      queue_depth_(prometheus::BuildGauge().Name("workqueue_depth").Help("Current depth of workqueue").Register(r)),
      queue_adds_(prometheus::BuildCounter()
                      .Name("workqueue_adds_total")
                      .Help("Total number of adds handled by workqueue")
                      .Register(r)),
      queue_latency_(prometheus::BuildHistogram()
                         .Name("workqueue_queue_duration_seconds")
                         .Help("How long in seconds an item stays in workqueue before being requested")
                         .Register(r)),
      work_duration_(prometheus::BuildHistogram()
                         .Name("workqueue_work_duration_seconds")
                         .Help("How long in seconds processing an item from workqueue takes.")
                         .Register(r)),
      queue_retries_(prometheus::BuildCounter()
                         .Name("workqueue_retries_total")
                         .Help("Total number of retries handled by workqueue")
                         .Register(r)) {}

void ClientMetrics::ObserveRequest(const std::string& host, const std::string& method, int code,
                                   std::chrono::nanoseconds latency) {
  requests_.Add({{"code", CodeLabel(code)}, {"method", method}, {"host", host}}).Increment();
  latency_.Add({{"verb", method}, {"host", host}}, RequestBuckets())
      .Observe(std::chrono::duration<double>(latency).count());
}

void ClientMetrics::ObserveRetry(const std::string& host, const std::string& method, int code) {
  retries_.Add({{"code", CodeLabel(code)}, {"verb", method}, {"host", host}}).Increment();
}

void ClientMetrics::ObserveWatchRestart(const std::string& resource, const std::string& reason) {
  watch_restarts_.Add({{"resource", resource}, {"reason", reason}}).Increment();
}

void ClientMetrics::DeclareWatch(const std::string& resource) {
  for (const char* reason : {"timeout", "gone", "error"})
    watch_restarts_.Add({{"resource", resource}, {"reason", reason}});
}

prometheus::Gauge& ClientMetrics::QueueDepth(const std::string& q) { return queue_depth_.Add({{"name", q}}); }
prometheus::Counter& ClientMetrics::QueueAdds(const std::string& q) { return queue_adds_.Add({{"name", q}}); }
prometheus::Histogram& ClientMetrics::QueueLatency(const std::string& q) {
  return queue_latency_.Add({{"name", q}}, QueueBuckets());
}
prometheus::Histogram& ClientMetrics::WorkDuration(const std::string& q) {
  return work_duration_.Add({{"name", q}}, QueueBuckets());
}
prometheus::Counter& ClientMetrics::QueueRetries(const std::string& q) { return queue_retries_.Add({{"name", q}}); }

}  // namespace ringmaster::kube
