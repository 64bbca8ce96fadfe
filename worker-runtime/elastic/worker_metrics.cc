#include "worker-runtime/elastic/worker_metrics.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "api/names.h"
#include "metrics/buckets.h"
#include "worker-runtime/elastic/elastic_driver.h"

namespace ringmaster::elastic {

namespace {

const prometheus::Histogram::BucketBoundaries& PhaseBuckets() {
  static const prometheus::Histogram::BucketBoundaries b =
      metrics::ExponentialBuckets(0.001, 2.5, 12);  // 1 ms .. ~60 s
  return b;
}

template <typename Builder>
auto& Register(Builder builder, const char* name, const char* help, prometheus::Registry& r,
               const std::map<std::string, std::string>& labels) {
  return builder.Name(name).Help(help).Labels(labels).Register(r);
}

// Another collectable's series with `labels` added (those a series has already are kept as they are).
class Labelled : public prometheus::Collectable {
 public:
  Labelled(std::shared_ptr<prometheus::Collectable> inner, std::map<std::string, std::string> labels)
      : inner_(std::move(inner)), labels_(std::move(labels)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families = inner_->Collect();
    for (auto& family : families) {
      for (auto& metric : family.metric) {
        for (const auto& [name, value] : labels_) {
          bool has = false;
          for (const auto& l : metric.label) has = has || l.name == name;
          if (!has) metric.label.push_back({name, value});
        }
        std::sort(metric.label.begin(), metric.label.end(),
                  [](const auto& a, const auto& b) { return a.name < b.name; });
      }
    }
    return families;
  }

 private:
  const std::shared_ptr<prometheus::Collectable> inner_;
  const std::map<std::string, std::string> labels_;
};

}  // namespace

std::map<std::string, std::string> JobLabels() {
  std::map<std::string, std::string> labels;
  for (const auto& [label, variable] : {std::pair<const char*, std::string_view>{"trainingjob", api::env::kJobName},
                                        {"namespace", api::env::kJobNamespace}}) {
    const char* value = std::getenv(std::string(variable).c_str());
    if (value != nullptr && *value != '\0') labels[label] = value;
  }
  return labels;
}

WorkerMetrics::WorkerMetrics(std::shared_ptr<gpu::GpuTelemetry> gpus, std::map<std::string, std::string> job_labels)
    : job_labels_(std::move(job_labels)),
      registry_(std::make_shared<prometheus::Registry>()),
      gpus_(std::move(gpus)),
      labelled_gpus_(gpus_ ? std::make_shared<Labelled>(gpus_, job_labels_) : nullptr),
      generation_(Register(prometheus::BuildGauge(), "ringmaster_worker_generation",
                           "Membership generation this worker has joined.", *registry_, job_labels_)
                      .Add({})),
      world_size_(Register(prometheus::BuildGauge(), "ringmaster_worker_world_size",
                           "Workers in the joined generation.", *registry_, job_labels_)
                      .Add({})),
      step_seconds_(Register(prometheus::BuildHistogram(), "ringmaster_worker_step_seconds",
                             "Duration of committed training steps.", *registry_, job_labels_)
                        .Add({}, PhaseBuckets())),
      samples_(Register(prometheus::BuildCounter(), "ringmaster_worker_samples_total",
                        "Samples this worker trained on: its share of each step's global batch.", *registry_,
                        job_labels_)
                   .Add({})),
      rebuild_seconds_(Register(prometheus::BuildHistogram(), "ringmaster_worker_rebuild_seconds",
                                "Rebuild duration, from the failure (or membership change) to resumed training.",
                                *registry_, job_labels_)
                           .Add({}, PhaseBuckets())),
      rebuild_phase_seconds_(Register(prometheus::BuildHistogram(), "ringmaster_worker_rebuild_phase_seconds",
                                      "Rebuild duration by phase (detect, rendezvous, communicator, restore).",
                                      *registry_, job_labels_)),
      rebuilds_(Register(prometheus::BuildCounter(), "ringmaster_worker_rebuilds_total", "Generations joined.",
                         *registry_, job_labels_)
                    .Add({})),
      rebuild_failures_(Register(prometheus::BuildCounter(), "ringmaster_worker_rebuild_failures_total",
                                 "Builds of a generation abandoned (rendezvous or communicator failed).", *registry_,
                                 job_labels_)
                            .Add({})),
      hangs_(Register(prometheus::BuildCounter(), "ringmaster_worker_hangs_total",
                      "Generations this worker's hang watchdog revoked (no step committed for a multiple of the "
                      "median step).",
                      *registry_, job_labels_)
                 .Add({})),
      steps_lost_(Register(prometheus::BuildCounter(), "ringmaster_worker_steps_lost_total",
                           "Computed steps rolled back by restores (not committed).", *registry_, job_labels_)
                      .Add({})),
      checkpoint_seconds_(Register(prometheus::BuildHistogram(), "ringmaster_worker_checkpoint_seconds",
                                   "Checkpoint save/restore duration by op.", *registry_, job_labels_)),
      checkpoint_bytes_(Register(prometheus::BuildCounter(), "ringmaster_worker_checkpoint_bytes_total",
                                 "Checkpoint bytes saved/restored by op.", *registry_, job_labels_)),
      checkpoint_failures_(Register(prometheus::BuildCounter(), "ringmaster_worker_checkpoint_failures_total",
                                    "Checkpoint saves/restores that failed, by op.", *registry_, job_labels_)),
      last_checkpoint_(Register(prometheus::BuildGauge(), "ringmaster_worker_last_checkpoint_timestamp_seconds",
                                "Unix time of the last checkpoint this worker saved successfully (0: none yet).",
                                *registry_, job_labels_)
                           .Add({})),
      collective_seconds_(Register(prometheus::BuildCounter(), "ringmaster_worker_collective_seconds_total",
                                   "Seconds spent in training collectives.", *registry_, job_labels_)
                              .Add({})),
      collective_bytes_(Register(prometheus::BuildCounter(), "ringmaster_worker_collective_bytes_total",
                                 "Bytes contributed to training collectives.", *registry_, job_labels_)
                            .Add({})) {
  // Every labelled series from the start, at 0: a panel or an alert over them has data before the first event.
  for (const char* phase : {"detect", "rendezvous", "communicator", "restore"}) {
    rebuild_phase_seconds_.Add({{"phase", phase}}, PhaseBuckets());
  }
  for (const char* op : {"save", "restore"}) {
    checkpoint_seconds_.Add({{"op", op}}, PhaseBuckets());
    checkpoint_bytes_.Add({{"op", op}});
    checkpoint_failures_.Add({{"op", op}});
  }
}

WorkerMetrics::~WorkerMetrics() { server_.reset(); }

std::string WorkerMetrics::ServeOutcome(const Status& served, int requested_port) const {
  if (served.ok()) return "serving /metrics and /readyz on port " + std::to_string(port());
  return "cannot serve /metrics and /readyz on port " + std::to_string(requested_port) +
         " (RINGMASTER_HEALTH_PORT; a TrainingJob's spec.ports.metrics): " + served.ToString() +
         "; training goes on without them (a pod's readiness probe on that port fails)";
}

Status WorkerMetrics::Serve(const std::string& bind_address) {
  metrics::MetricsServerOptions o;
  o.bind_address = bind_address;
  o.collectables = Collectables();
  o.checks = {{"/healthz", [] { return true; }}, {"/readyz", [this] { return ready_.load(); }}};
  RINGMASTER_ASSIGN_OR_RETURN(server_, metrics::MetricsServer::Start(std::move(o)));
  return Status::Ok();
}

int WorkerMetrics::port() const { return server_ ? server_->port() : 0; }

std::string WorkerMetrics::Render() const { return metrics::RenderText(Collectables()); }

std::vector<std::weak_ptr<prometheus::Collectable>> WorkerMetrics::Collectables() const {
  std::vector<std::weak_ptr<prometheus::Collectable>> c = {registry_};
  if (labelled_gpus_) c.push_back(labelled_gpus_);
  return c;
}

void WorkerMetrics::Available() { ready_ = true; }

void WorkerMetrics::Joined(int64_t generation, int world_size) {
  generation_.Set(static_cast<double>(generation));
  world_size_.Set(world_size);
}

void WorkerMetrics::Step(double seconds) { step_seconds_.Observe(seconds); }

void WorkerMetrics::Samples(uint64_t n) { samples_.Increment(static_cast<double>(n)); }

void WorkerMetrics::Rebuilt(const RebuildStats& s) {
  rebuilds_.Increment();
  steps_lost_.Increment(static_cast<double>(s.steps_lost));
  rebuild_seconds_.Observe(s.detect + s.rendezvous + s.communicator + s.restore);
  rebuild_phase_seconds_.Add({{"phase", "detect"}}, PhaseBuckets()).Observe(s.detect);
  rebuild_phase_seconds_.Add({{"phase", "rendezvous"}}, PhaseBuckets()).Observe(s.rendezvous);
  rebuild_phase_seconds_.Add({{"phase", "communicator"}}, PhaseBuckets()).Observe(s.communicator);
  rebuild_phase_seconds_.Add({{"phase", "restore"}}, PhaseBuckets()).Observe(s.restore);
}

void WorkerMetrics::RebuildFailed() { rebuild_failures_.Increment(); }

void WorkerMetrics::Hung() { hangs_.Increment(); }

void WorkerMetrics::CheckpointSaved(double seconds, uint64_t bytes) {
  checkpoint_seconds_.Add({{"op", "save"}}, PhaseBuckets()).Observe(seconds);
  checkpoint_bytes_.Add({{"op", "save"}}).Increment(static_cast<double>(bytes));
  last_checkpoint_.SetToCurrentTime();
}

void WorkerMetrics::CheckpointRestored(double seconds, uint64_t bytes) {
  checkpoint_seconds_.Add({{"op", "restore"}}, PhaseBuckets()).Observe(seconds);
  checkpoint_bytes_.Add({{"op", "restore"}}).Increment(static_cast<double>(bytes));
}

void WorkerMetrics::CheckpointFailed(const std::string& op) { checkpoint_failures_.Add({{"op", op}}).Increment(); }

void WorkerMetrics::Collective(double seconds, uint64_t bytes) {
  collective_seconds_.Increment(seconds);
  collective_bytes_.Increment(static_cast<double>(bytes));
}

}  // namespace ringmaster::elastic
