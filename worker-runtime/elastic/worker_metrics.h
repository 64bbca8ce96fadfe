// WorkerMetrics: the worker's Prometheus series (a prometheus-cpp registry) and its HTTP endpoint:
// /metrics, /healthz, and /readyz — ready once the worker can take part (the pod's readiness probe). Not
// "once joined": the operator admits only Ready pods into the membership, so a worker that waited for a
// membership including it before turning Ready would never be admitted. The job, namespace and pod labels
// come from Prometheus' target labels (the chart's PodMonitor), not from the worker.
//
//   ringmaster_worker_generation                        gauge: the joined membership generation
//   ringmaster_worker_world_size                        gauge
//   ringmaster_worker_step_seconds                      histogram: committed training steps
//   ringmaster_worker_samples_total                     counter: samples this worker trained on
//   ringmaster_worker_rebuild_seconds                   histogram: whole rebuilds, failure to resumed training
//   ringmaster_worker_rebuild_phase_seconds{phase}      histogram: detect, rendezvous, communicator, restore
//   ringmaster_worker_rebuilds_total                    counter: generations joined
//   ringmaster_worker_rebuild_failures_total            counter: builds of a generation abandoned
//   ringmaster_worker_steps_lost_total                  counter: computed steps rolled back by restores
//   ringmaster_worker_checkpoint_seconds{op}            histogram: save, restore
//   ringmaster_worker_checkpoint_bytes_total{op}        counter
//   ringmaster_worker_checkpoint_failures_total{op}     counter
//   ringmaster_worker_collective_seconds_total          counter
//   ringmaster_worker_collective_bytes_total            counter
//
// Thread-safety: every method is thread-safe. Ownership: the server (when started) serves this object's
// registry; both live as long as the object.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <memory>
#include <string>

#include "base/status.h"
#include "metrics/metrics_server.h"

namespace ringmaster::elastic {

struct RebuildStats;

class WorkerMetrics {
 public:
  WorkerMetrics();
  ~WorkerMetrics();

  // Serves /metrics, /healthz and /readyz on bind_address ("0.0.0.0:9400"; port 0 picks one). Errors:
  // those of metrics::MetricsServer::Start (InvalidArgument, Unavailable).
  Status Serve(const std::string& bind_address);
  int port() const;

  // The worker can take part: its store port is bound and it watches its membership. /readyz is 200 from now on.
  void Available();
  void Joined(int64_t generation, int world_size);
  void Step(double seconds);
  void Samples(uint64_t n);
  void Rebuilt(const RebuildStats& stats);
  void RebuildFailed();
  void CheckpointSaved(double seconds, uint64_t bytes);
  void CheckpointRestored(double seconds, uint64_t bytes);
  void CheckpointFailed(const std::string& op);  // "save" or "restore"
  void Collective(double seconds, uint64_t bytes);

  bool ready() const { return ready_.load(); }
  // The /metrics text, without HTTP.
  std::string Render() const;

 private:
  const std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge& generation_;
  prometheus::Gauge& world_size_;
  prometheus::Histogram& step_seconds_;
  prometheus::Counter& samples_;
  prometheus::Histogram& rebuild_seconds_;
  prometheus::Family<prometheus::Histogram>& rebuild_phase_seconds_;
  prometheus::Counter& rebuilds_;
  prometheus::Counter& rebuild_failures_;
  prometheus::Counter& steps_lost_;
  prometheus::Family<prometheus::Histogram>& checkpoint_seconds_;
  prometheus::Family<prometheus::Counter>& checkpoint_bytes_;
  prometheus::Family<prometheus::Counter>& checkpoint_failures_;
  prometheus::Counter& collective_seconds_;
  prometheus::Counter& collective_bytes_;
  std::atomic<bool> ready_{false};
  std::unique_ptr<metrics::MetricsServer> server_;
};

}  // namespace ringmaster::elastic
