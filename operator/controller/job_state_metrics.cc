#include "operator/controller/job_state_metrics.h"

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/job_status.h"
#include "api/training_job.h"
#include "base/json_path.h"
#include "kube/client.h"
#include "operator/controller/goodput.h"
#include "operator/controller/job_spec.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  return prometheus::MetricFamily{name, help, type, {}};
}

void Add(prometheus::MetricFamily& family, std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (family.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  family.metric.push_back(std::move(m));
}

double NumberAt(const json& j, std::initializer_list<std::string_view> path, double fallback = 0) {
  const json& v = At(j, path);
  return v.is_number() ? v.get<double>() : fallback;
}

// What a scrape keeps of one job: its labels and the numbers of its series.
struct JobRow {
  std::string ns, name, phase;
  double min = 0, max = 0, desired = 0, ready = 0, spares = 0, generation = 0, world = 0, restarts = 0,
         max_restarts = 0;
  struct Goodput {
    double ratio = 0;
    std::array<double, 5> lost{};  // in kLostPhases' order
    double failures = 0;
  };
  std::optional<Goodput> goodput;  // only for jobs with a status.goodput
};

constexpr std::array<const char*, 5> kLostPhases = {"detect", "reschedule", "rebuild", "restore", "replay"};

// The goodput figures of one job, from its status.goodput (absent: none).
std::optional<JobRow::Goodput> GoodputOf(const json& job, std::chrono::system_clock::time_point now) {
  const json& status = At(job, {"status"});
  if (!At(status, {"goodput"}).is_object()) return std::nullopt;
  auto decoded = api::DecodeTrainingJobStatus(status);
  if (!decoded.ok() || !decoded->goodput) return std::nullopt;
  const api::Goodput& g = *decoded->goodput;
  const api::Membership m = decoded->membership.value_or(api::Membership{});
  const int32_t desired = decoded->replicas ? decoded->replicas->desired : 0;
  const LiveFigures live = LiveGoodput(g, m.generation, m.pod_count(), desired, decoded->phase, now);
  const api::LostSeconds& l = g.lost_seconds;
  return JobRow::Goodput{
      live.ratio, {l.detect, l.reschedule, l.rebuild, l.restore, l.replay}, static_cast<double>(g.failures)};
}

JobRow RowOf(const json& job, std::chrono::system_clock::time_point now) {
  JobRow r;
  r.ns = kube::NamespaceOf(job);
  r.name = kube::NameOf(job);
  r.phase = StringAt(job, {"status", "phase"});
  if (r.phase.empty()) r.phase = api::phase::kPending;
  r.min = NumberAt(job, {"spec", "replicas", "min"});
  r.max = NumberAt(job, {"spec", "replicas", "max"});
  r.desired = NumberAt(job, {"status", "replicas", "desired"});
  r.ready = NumberAt(job, {"status", "replicas", "ready"});
  r.spares = NumberAt(job, {"status", "replicas", "spares"});
  r.generation = NumberAt(job, {"status", "membership", "generation"});
  r.world = NumberAt(job, {"status", "membership", "worldSize"});
  r.restarts = NumberAt(job, {"status", "restartCount"});
  // The CRD defaults it; a job stored before that default existed gets the controller's (JobSpec).
  r.max_restarts = NumberAt(job, {"spec", "elasticPolicy", "maxRestarts"}, JobSpec{}.max_restarts);
  r.goodput = GoodputOf(job, now);
  return r;
}

std::vector<prometheus::ClientMetric::Label> IdOf(const JobRow& r) {
  return {{"namespace", r.ns}, {"trainingjob", r.name}};
}

// Series per batch of a per-job family (metrics::FamilyStream): a scrape holds one batch of series at a time.
constexpr size_t kSeriesPerBatch = 500;

// Emits a family, in batches of kSeriesPerBatch, with `add(row, family)` adding each row's series (none or
// several).
void EmitPerJob(const metrics::FamilyStream::Emit& emit, const char* name, const char* help,
                prometheus::MetricType type, const std::vector<JobRow>& rows,
                const std::function<void(const JobRow&, prometheus::MetricFamily&)>& add) {
  auto batch = Family(name, help, type);
  bool emitted = false;
  for (const auto& r : rows) {
    add(r, batch);
    if (batch.metric.size() >= kSeriesPerBatch) {
      emit(std::move(batch));
      emitted = true;
      batch = Family(name, help, type);
    }
  }
  if (!batch.metric.empty() || !emitted) emit(std::move(batch));  // an empty family still has its header
}

// A family with one series per row, valued `value(row)`.
void EmitPerJob(const metrics::FamilyStream::Emit& emit, const char* name, const char* help,
                prometheus::MetricType type, const std::vector<JobRow>& rows, double (*value)(const JobRow&)) {
  EmitPerJob(emit, name, help, type, rows,
             [value](const JobRow& r, prometheus::MetricFamily& f) { Add(f, IdOf(r), value(r)); });
}

}  // namespace

JobStateMetrics::JobStateMetrics(const kube::Store* jobs, std::function<bool()> active, NowFn now)
    : jobs_(jobs), active_(std::move(active)), now_(std::move(now)) {}

void JobStateMetrics::CollectEach(const Emit& emit) const {
  if (!active_()) return;
  using prometheus::MetricType;
  const auto now = now_();
  // One job decoded at a time: the cache is packed, and List() would decode every job at once.
  std::vector<JobRow> rows;
  const std::vector<std::string> keys = jobs_->Keys();
  rows.reserve(keys.size());
  for (const auto& key : keys) {
    if (const kube::ObjectPtr job = jobs_->Get(key)) rows.push_back(RowOf(*job, now));  // else deleted since Keys()
  }

  std::map<std::string, int> by_phase;
  for (std::string_view phase : api::phase::kAll) by_phase[std::string(phase)] = 0;
  for (const auto& r : rows) by_phase[r.phase]++;
  auto phases = Family("ringmaster_trainingjobs", "TrainingJobs by phase.", MetricType::Gauge);
  for (const auto& [phase, n] : by_phase) Add(phases, {{"phase", phase}}, n);
  emit(std::move(phases));

  EmitPerJob(emit, "ringmaster_trainingjob_info", "One series per TrainingJob, labelled with its phase.",
             MetricType::Gauge, rows, [](const JobRow& r, prometheus::MetricFamily& f) {
               Add(f, {{"namespace", r.ns}, {"trainingjob", r.name}, {"phase", r.phase}}, 1);
             });
  EmitPerJob(emit, "ringmaster_trainingjob_workers_min", "The job's minimum workers (spec.replicas.min).",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.min; });
  EmitPerJob(emit, "ringmaster_trainingjob_workers_max", "The job's maximum workers (spec.replicas.max).",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.max; });
  EmitPerJob(emit, "ringmaster_trainingjob_workers_desired", "Workers the operator wants for the job.",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.desired; });
  EmitPerJob(emit, "ringmaster_trainingjob_workers_ready", "The job's Running and Ready worker pods.",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.ready; });
  EmitPerJob(emit, "ringmaster_trainingjob_workers_spare",
             "Ready workers waiting outside the membership to replace a lost member (spec.replicas.spares).",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.spares; });
  EmitPerJob(emit, "ringmaster_trainingjob_membership_generation", "The job's published membership generation.",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.generation; });
  EmitPerJob(emit, "ringmaster_trainingjob_membership_world_size", "Workers in the published membership.",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.world; });
  EmitPerJob(emit, "ringmaster_trainingjob_restarts_total", "Failure-driven worker restarts (status.restartCount).",
             MetricType::Counter, rows, [](const JobRow& r) { return r.restarts; });
  EmitPerJob(emit, "ringmaster_trainingjob_max_restarts",
             "Failure-driven worker restarts the job may take before it fails (spec.elasticPolicy.maxRestarts).",
             MetricType::Gauge, rows, [](const JobRow& r) { return r.max_restarts; });

  EmitPerJob(emit, "ringmaster_trainingjob_goodput_ratio",
             "Productive share of the job's wall time: stepping, weighted by world / desired world "
             "(status.goodput, brought forward to now).",
             MetricType::Gauge, rows, [](const JobRow& r, prometheus::MetricFamily& f) {
               if (r.goodput) Add(f, IdOf(r), r.goodput->ratio);
             });
  EmitPerJob(emit, "ringmaster_trainingjob_lost_seconds_total",
             "Seconds of the full world the job lost to failures and membership changes, by phase "
             "(status.goodput.lostSeconds).",
             MetricType::Counter, rows, [](const JobRow& r, prometheus::MetricFamily& f) {
               if (!r.goodput) return;
               for (size_t i = 0; i < kLostPhases.size(); ++i)
                 Add(f, {{"namespace", r.ns}, {"trainingjob", r.name}, {"phase", kLostPhases[i]}}, r.goodput->lost[i]);
             });
  EmitPerJob(emit, "ringmaster_trainingjob_failures_total",
             "Membership generations published for a lost worker (status.goodput.failures).", MetricType::Counter, rows,
             [](const JobRow& r, prometheus::MetricFamily& f) {
               if (r.goodput) Add(f, IdOf(r), r.goodput->failures);
             });
}

}  // namespace ringmaster::controller
