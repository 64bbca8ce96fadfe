#include "elastic/worker_metrics.h"

#include "elastic/elastic_driver.h"

namespace ringmaster::elastic {

namespace {
const std::vector<double>& PhaseBuckets() {
  static const std::vector<double> b = metrics::ExponentialBuckets(0.001, 2.5, 12);  // 1 ms .. ~60 s
  return b;
}
}  // namespace

WorkerMetrics::WorkerMetrics()
    : generation_(registry_.AddGaugeFamily("ringmaster_worker_generation", "Membership generation this worker has joined.").Add({})),
      world_size_(registry_.AddGaugeFamily("ringmaster_worker_world_size", "Workers in the joined generation.").Add({})),
      step_seconds_(registry_.AddHistogramFamily("ringmaster_worker_step_seconds", "Duration of committed training steps.")
                        .Add({}, PhaseBuckets())),
      rebuild_seconds_(registry_.AddHistogramFamily("ringmaster_worker_rebuild_seconds",
                                                    "Rebuild duration by phase (detect, rendezvous, communicator, restore).")),
      rebuilds_(registry_.AddCounterFamily("ringmaster_worker_rebuilds_total", "Generations joined.").Add({})),
      steps_lost_(registry_.AddCounterFamily("ringmaster_worker_steps_lost_total",
                                             "Computed steps rolled back by restores (not committed).").Add({})),
      checkpoint_seconds_(registry_.AddHistogramFamily("ringmaster_worker_checkpoint_seconds",
                                                       "Checkpoint save/restore duration by op.")),
      checkpoint_bytes_(registry_.AddCounterFamily("ringmaster_worker_checkpoint_bytes_total",
                                                   "Checkpoint bytes saved/restored by op.")),
      collective_seconds_(registry_.AddCounterFamily("ringmaster_worker_collective_seconds_total",
                                                     "Seconds spent in training collectives.").Add({})),
      collective_bytes_(registry_.AddCounterFamily("ringmaster_worker_collective_bytes_total",
                                                   "Bytes contributed to training collectives.").Add({})) {}

WorkerMetrics::~WorkerMetrics() { server_.reset(); }

Status WorkerMetrics::Serve(const std::string& bind_address) {
  auto server = std::make_unique<metrics::HttpServer>();
  server->HandleMetrics(&registry_);
  server->HandleCheck("/healthz", [] { return true; });
  server->HandleCheck("/readyz", [this] { return ready_.load(); });
  RINGMASTER_RETURN_IF_ERROR(server->Start(bind_address));
  server_ = std::move(server);
  return Status::Ok();
}

int WorkerMetrics::port() const { return server_ ? server_->port() : 0; }

void WorkerMetrics::Available() { ready_ = true; }

void WorkerMetrics::Joined(int64_t generation, int world_size) {
  generation_.Set(static_cast<double>(generation));
  world_size_.Set(world_size);
}

void WorkerMetrics::Step(double seconds) { step_seconds_.Observe(seconds); }

void WorkerMetrics::Rebuilt(const RebuildStats& s) {
  rebuilds_.Increment();
  steps_lost_.Increment(static_cast<double>(s.steps_lost));
  rebuild_seconds_.Add({{"phase", "detect"}}, PhaseBuckets()).Observe(s.detect);
  rebuild_seconds_.Add({{"phase", "rendezvous"}}, PhaseBuckets()).Observe(s.rendezvous);
  rebuild_seconds_.Add({{"phase", "communicator"}}, PhaseBuckets()).Observe(s.communicator);
  rebuild_seconds_.Add({{"phase", "restore"}}, PhaseBuckets()).Observe(s.restore);
}

void WorkerMetrics::CheckpointSaved(double seconds, uint64_t bytes) {
  checkpoint_seconds_.Add({{"op", "save"}}, PhaseBuckets()).Observe(seconds);
  checkpoint_bytes_.Add({{"op", "save"}}).Increment(static_cast<double>(bytes));
}

void WorkerMetrics::CheckpointRestored(double seconds, uint64_t bytes) {
  checkpoint_seconds_.Add({{"op", "restore"}}, PhaseBuckets()).Observe(seconds);
  checkpoint_bytes_.Add({{"op", "restore"}}).Increment(static_cast<double>(bytes));
}

void WorkerMetrics::Collective(double seconds, uint64_t bytes) {
  collective_seconds_.Increment(seconds);
  collective_bytes_.Increment(static_cast<double>(bytes));
}

}  // namespace ringmaster::elastic
