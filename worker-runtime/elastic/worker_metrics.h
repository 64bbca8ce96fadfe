// WorkerMetrics: the worker's Prometheus series (a prometheus-cpp registry) and its HTTP endpoint:
// /metrics, /healthz, and /readyz — ready once the worker can take part (the pod's readiness probe). Not
// "once joined": the operator admits only Ready pods into the membership, so a worker that waited for a
// membership including it before turning Ready would never be admitted.
//
// Every series carries the worker's job as const labels, `trainingjob` and `namespace` (JobLabels: from
// RINGMASTER_JOB_NAME and RINGMASTER_JOB_NAMESPACE, none when unset), so that dashboards and alerts select a job's
// workers however they are scraped: through the chart's PodMonitor, or by the prometheus.io/scrape annotations.
// Where the scrape sets the same label names as target labels (the PodMonitor: namespace always, trainingjob from
// the pod's ringmaster.io/job-name label) the target's win (honor_labels false: a pod cannot claim another
// namespace), the worker's become exported_namespace and exported_trainingjob, and the PodMonitor drops those;
// the values agree anyway. The pod label comes from the scrape alone.
//
//   ringmaster_worker_generation                        gauge: the joined membership generation
//   ringmaster_worker_world_size                        gauge
//   ringmaster_worker_step_seconds                      histogram: committed training steps
//   ringmaster_worker_samples_total                     counter: samples this worker trained on
//   ringmaster_worker_rebuild_seconds                   histogram: whole rebuilds, failure to resumed training
//   ringmaster_worker_rebuild_phase_seconds{phase}      histogram: detect, rendezvous, communicator, restore
//   ringmaster_worker_rebuilds_total                    counter: generations joined
//   ringmaster_worker_rebuild_failures_total            counter: builds of a generation abandoned
//   ringmaster_worker_hangs_total                       counter: generations this worker's hang watchdog revoked
//   ringmaster_worker_steps_lost_total                  counter: computed steps rolled back by restores
//   ringmaster_worker_checkpoint_seconds{op}            histogram: save, restore
//   ringmaster_worker_checkpoint_bytes_total{op}        counter
//   ringmaster_worker_checkpoint_failures_total{op}     counter
//   ringmaster_worker_last_checkpoint_timestamp_seconds gauge: unix time of this worker's last successful
//                                                       save (rank 0 saves); 0 before its first
//   ringmaster_worker_collective_seconds_total          counter
//   ringmaster_worker_collective_bytes_total            counter
// and, when given a GpuTelemetry (a machine with NVIDIA's driver), its series read at every scrape:
//   ringmaster_worker_gpu_utilization_ratio{gpu,uuid}, _gpu_memory_used_bytes, _gpu_memory_total_bytes,
//   _gpu_power_watts, _gpu_nccl_bytes_total (gpu/gpu_telemetry.h). Without one, none of them.
//
// Thread-safety: every method is thread-safe. Ownership: the server (when started) serves this object's
// registry and the GPU telemetry it shares; all live as long as the object.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "metrics/metrics_server.h"
#include "worker-runtime/gpu/gpu_telemetry.h"

namespace ringmaster::elastic {

struct RebuildStats;

// {trainingjob: $RINGMASTER_JOB_NAME, namespace: $RINGMASTER_JOB_NAMESPACE}, each only when set and not empty.
std::map<std::string, std::string> JobLabels();

class WorkerMetrics {
 public:
  // `gpus` (may be null: no GPU series) is collected at every scrape and Render(). `job_labels` go on every series
  // (the GPU series too).
  explicit WorkerMetrics(std::shared_ptr<gpu::GpuTelemetry> gpus = nullptr,
                         std::map<std::string, std::string> job_labels = JobLabels());
  ~WorkerMetrics();

  // Serves /metrics, /healthz and /readyz on bind_address ("0.0.0.0:29600"; port 0 picks one). Errors:
  // those of metrics::MetricsServer::Start (InvalidArgument, Unavailable).
  Status Serve(const std::string& bind_address);
  // The log line after Serve(host:port) returned `served`: where the endpoints are, or why not, the setting that
  // chose the port, and that training goes on without them.
  std::string ServeOutcome(const Status& served, int requested_port) const;
  int port() const;

  // The worker can take part: its store port is bound and it watches its membership. /readyz is 200 from now on.
  void Available();
  void Joined(int64_t generation, int world_size);
  void Step(double seconds);
  void Samples(uint64_t n);
  void Rebuilt(const RebuildStats& stats);
  void RebuildFailed();
  // The hang watchdog (hang_watchdog.h) revoked the generation: no step progress for a multiple of the median step.
  void Hung();
  // A successful save: its duration and size, and now as ringmaster_worker_last_checkpoint_timestamp_seconds.
  void CheckpointSaved(double seconds, uint64_t bytes);
  void CheckpointRestored(double seconds, uint64_t bytes);
  void CheckpointFailed(const std::string& op);  // "save" or "restore"
  void Collective(double seconds, uint64_t bytes);

  // Where the NCCL communicators count bytes per GPU (RuntimeConfig::gpu_traffic); null without GPU telemetry.
  std::shared_ptr<comm::DeviceTraffic> gpu_traffic() const { return gpus_ ? gpus_->traffic() : nullptr; }

  bool ready() const { return ready_.load(); }
  // The /metrics text, without HTTP.
  std::string Render() const;

 private:
  // The registry, then the GPU telemetry when there is one.
  std::vector<std::weak_ptr<prometheus::Collectable>> Collectables() const;

  const std::map<std::string, std::string> job_labels_;
  const std::shared_ptr<prometheus::Registry> registry_;
  const std::shared_ptr<gpu::GpuTelemetry> gpus_;
  // gpus_ with job_labels_ added to its series (null without gpus_).
  const std::shared_ptr<prometheus::Collectable> labelled_gpus_;
  prometheus::Gauge& generation_;
  prometheus::Gauge& world_size_;
  prometheus::Histogram& step_seconds_;
  prometheus::Counter& samples_;
  prometheus::Histogram& rebuild_seconds_;
  prometheus::Family<prometheus::Histogram>& rebuild_phase_seconds_;
  prometheus::Counter& rebuilds_;
  prometheus::Counter& rebuild_failures_;
  prometheus::Counter& hangs_;
  prometheus::Counter& steps_lost_;
  prometheus::Family<prometheus::Histogram>& checkpoint_seconds_;
  prometheus::Family<prometheus::Counter>& checkpoint_bytes_;
  prometheus::Family<prometheus::Counter>& checkpoint_failures_;
  prometheus::Gauge& last_checkpoint_;
  prometheus::Counter& collective_seconds_;
  prometheus::Counter& collective_bytes_;
  std::atomic<bool> ready_{false};
  std::unique_ptr<metrics::MetricsServer> server_;
};

}  // namespace ringmaster::elastic
