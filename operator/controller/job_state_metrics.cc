#include "operator/controller/job_state_metrics.h"

#include <array>
#include <map>
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

// The goodput series of one job, from its status.goodput (absent: none).
void AddGoodput(const json& job, const std::vector<prometheus::ClientMetric::Label>& id,
                std::chrono::system_clock::time_point now, prometheus::MetricFamily& ratio,
                prometheus::MetricFamily& lost, prometheus::MetricFamily& failures) {
  const json& status = At(job, {"status"});
  if (!At(status, {"goodput"}).is_object()) return;
  auto decoded = api::DecodeTrainingJobStatus(status);
  if (!decoded.ok() || !decoded->goodput) return;
  const api::Goodput& g = *decoded->goodput;
  const api::Membership m = decoded->membership.value_or(api::Membership{});
  const int32_t desired = decoded->replicas ? decoded->replicas->desired : 0;
  const LiveFigures live = LiveGoodput(g, m.generation, m.pod_count(), desired, decoded->phase, now);
  Add(ratio, id, live.ratio);
  const api::LostSeconds& l = g.lost_seconds;
  for (const auto& [phase, seconds] : {std::pair<const char*, double>{"detect", l.detect},
                                       {"reschedule", l.reschedule},
                                       {"rebuild", l.rebuild},
                                       {"restore", l.restore},
                                       {"replay", l.replay}}) {
    auto labels = id;
    labels.push_back({"phase", phase});
    Add(lost, labels, seconds);
  }
  Add(failures, id, static_cast<double>(g.failures));
}

}  // namespace

JobStateMetrics::JobStateMetrics(const kube::Store* jobs, std::function<bool()> active, NowFn now)
    : jobs_(jobs), active_(std::move(active)), now_(std::move(now)) {}

std::vector<prometheus::MetricFamily> JobStateMetrics::Collect() const {
  if (!active_()) return {};
  using prometheus::MetricType;
  auto phases = Family("ringmaster_trainingjobs", "TrainingJobs by phase.", MetricType::Gauge);
  auto info =
      Family("ringmaster_trainingjob_info", "One series per TrainingJob, labelled with its phase.", MetricType::Gauge);
  auto min =
      Family("ringmaster_trainingjob_workers_min", "The job's minimum workers (spec.replicas.min).", MetricType::Gauge);
  auto max =
      Family("ringmaster_trainingjob_workers_max", "The job's maximum workers (spec.replicas.max).", MetricType::Gauge);
  auto desired =
      Family("ringmaster_trainingjob_workers_desired", "Workers the operator wants for the job.", MetricType::Gauge);
  auto ready =
      Family("ringmaster_trainingjob_workers_ready", "The job's Running and Ready worker pods.", MetricType::Gauge);
  auto spares = Family("ringmaster_trainingjob_workers_spare",
                       "Ready workers waiting outside the membership to replace a lost member (spec.replicas.spares).",
                       MetricType::Gauge);
  auto generation = Family("ringmaster_trainingjob_membership_generation", "The job's published membership generation.",
                           MetricType::Gauge);
  auto world =
      Family("ringmaster_trainingjob_membership_world_size", "Workers in the published membership.", MetricType::Gauge);
  auto restarts = Family("ringmaster_trainingjob_restarts_total",
                         "Failure-driven worker restarts (status.restartCount).", MetricType::Counter);
  auto max_restarts = Family("ringmaster_trainingjob_max_restarts",
                             "Failure-driven worker restarts the job may take before it fails "
                             "(spec.elasticPolicy.maxRestarts).",
                             MetricType::Gauge);
  auto goodput = Family("ringmaster_trainingjob_goodput_ratio",
                        "Productive share of the job's wall time: stepping, weighted by world / desired world "
                        "(status.goodput, brought forward to now).",
                        MetricType::Gauge);
  auto lost = Family("ringmaster_trainingjob_lost_seconds_total",
                     "Seconds of the full world the job lost to failures and membership changes, by phase "
                     "(status.goodput.lostSeconds).",
                     MetricType::Counter);
  auto failures =
      Family("ringmaster_trainingjob_failures_total",
             "Membership generations published for a lost worker (status.goodput.failures).", MetricType::Counter);
  const auto now = now_();

  std::map<std::string, int> by_phase;
  for (std::string_view phase : api::phase::kAll) by_phase[std::string(phase)] = 0;
  // One job decoded at a time: the cache is packed, and List() would decode every job at once (at 1,000 jobs
  // that was most of a scrape's peak memory).
  for (const auto& key : jobs_->Keys()) {
    const kube::ObjectPtr job = jobs_->Get(key);
    if (!job) continue;  // deleted since Keys()
    std::string phase = StringAt(*job, {"status", "phase"});
    if (phase.empty()) phase = api::phase::kPending;
    by_phase[phase]++;
    std::vector<prometheus::ClientMetric::Label> id = {{"namespace", kube::NamespaceOf(*job)},
                                                       {"trainingjob", kube::NameOf(*job)}};
    auto with_phase = id;
    with_phase.push_back({"phase", phase});
    Add(info, with_phase, 1);
    Add(min, id, NumberAt(*job, {"spec", "replicas", "min"}));
    Add(max, id, NumberAt(*job, {"spec", "replicas", "max"}));
    Add(desired, id, NumberAt(*job, {"status", "replicas", "desired"}));
    Add(ready, id, NumberAt(*job, {"status", "replicas", "ready"}));
    Add(spares, id, NumberAt(*job, {"status", "replicas", "spares"}));
    Add(generation, id, NumberAt(*job, {"status", "membership", "generation"}));
    Add(world, id, NumberAt(*job, {"status", "membership", "worldSize"}));
    Add(restarts, id, NumberAt(*job, {"status", "restartCount"}));
    // The CRD defaults it; a job stored before that default existed gets the controller's (JobSpec).
    Add(max_restarts, id, NumberAt(*job, {"spec", "elasticPolicy", "maxRestarts"}, JobSpec{}.max_restarts));
    AddGoodput(*job, id, now, goodput, lost, failures);
  }
  for (const auto& [phase, n] : by_phase) Add(phases, {{"phase", phase}}, n);
  return {std::move(phases),       std::move(info),    std::move(min),        std::move(max),     std::move(desired),
          std::move(ready),        std::move(spares),  std::move(generation), std::move(world),   std::move(restarts),
          std::move(max_restarts), std::move(goodput), std::move(lost),       std::move(failures)};
}

}  // namespace ringmaster::controller
