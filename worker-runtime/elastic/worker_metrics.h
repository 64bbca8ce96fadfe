// WorkerMetrics: the worker's Prometheus series (metrics/ registry) and
// its HTTP endpoint: /metrics, /healthz, and /readyz — ready once the worker
// can take part (the pod's readiness probe). Not "once joined": the operator
// admits only Ready pods into the membership, so a worker that waited for a
// membership including it before turning Ready would never be admitted.
//
//   ringmaster_worker_generation                      gauge
//   ringmaster_worker_world_size                      gauge
//   ringmaster_worker_step_seconds                    histogram
//   ringmaster_worker_rebuild_seconds{phase}          histogram: detect, rendezvous, communicator, restore
//   ringmaster_worker_rebuilds_total                  counter
//   ringmaster_worker_steps_lost_total                counter: computed steps rolled back by restores
//   ringmaster_worker_checkpoint_seconds{op}          histogram: save, restore
//   ringmaster_worker_checkpoint_bytes_total{op}      counter
//   ringmaster_worker_collective_seconds_total        counter
//   ringmaster_worker_collective_bytes_total          counter
//
// Thread-safety: every method is thread-safe. Ownership: the server (when
// started) serves this object's registry; both live as long as the object.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "base/status.h"
#include "metrics/http_server.h"
#include "metrics/metrics.h"

namespace ringmaster::elastic {

struct RebuildStats;

class WorkerMetrics {
 public:
  WorkerMetrics();
  ~WorkerMetrics();

  // Serves /metrics, /healthz and /readyz on bind_address ("0.0.0.0:9400"; port 0
  // picks one). Errors: those of HttpServer::Start (InvalidArgument, Unavailable).
  Status Serve(const std::string& bind_address);
  int port() const;

  // The worker can take part: its store port is bound and it watches its membership. /readyz is 200 from now on.
  void Available();
  void Joined(int64_t generation, int world_size);
  void Step(double seconds);
  void Rebuilt(const RebuildStats& stats);
  void CheckpointSaved(double seconds, uint64_t bytes);
  void CheckpointRestored(double seconds, uint64_t bytes);
  void Collective(double seconds, uint64_t bytes);

  bool ready() const { return ready_.load(); }
  std::string Render() const { return registry_.Render(); }

 private:
  metrics::Registry registry_;
  metrics::Gauge& generation_;
  metrics::Gauge& world_size_;
  metrics::Histogram& step_seconds_;
  metrics::Family<metrics::Histogram>& rebuild_seconds_;
  metrics::Counter& rebuilds_;
  metrics::Counter& steps_lost_;
  metrics::Family<metrics::Histogram>& checkpoint_seconds_;
  metrics::Family<metrics::Counter>& checkpoint_bytes_;
  metrics::Counter& collective_seconds_;
  metrics::Counter& collective_bytes_;
  std::atomic<bool> ready_{false};
  std::unique_ptr<metrics::HttpServer> server_;
};

}  // namespace ringmaster::elastic
