#include "operator/kubectl_plugin/job_summary.h"

#include "api/job_status.h"
#include "base/time_format.h"
#include "operator/kubectl_plugin/durations.h"
#include "operator/kubectl_plugin/progress.h"
#include "operator/kubectl_plugin/timeline.h"

namespace ringmaster::kubectl_plugin {

namespace {

constexpr char kIndent[] = "             ";  // under a field's value

std::string Field(const std::string& name, const std::string& value) {
  std::string label = name.empty() ? std::string() : name + ":";
  label.resize(sizeof kIndent - 1, ' ');
  return label + value + "\n";
}

std::string Ago(const std::string& rfc3339, Clock::time_point now) {
  auto t = ParseRfc3339(rfc3339);
  if (!t) return rfc3339;
  return rfc3339 + " (" + HumanDuration(std::chrono::duration_cast<std::chrono::milliseconds>(now - *t)) + " ago)";
}

std::string Workers(const api::TrainingJob& job) {
  const auto& s = job.status;
  std::string out;
  if (s.membership && s.membership->generation > 0) {
    const api::Membership& m = *s.membership;
    out = "world size " + std::to_string(m.world_size());
    if (m.pod_count() != m.world_size()) out += " (" + std::to_string(m.pod_count()) + " pods)";
    out += " in generation " + std::to_string(m.generation);
  } else {
    out = "no membership published yet";
  }
  const int64_t desired = s.replicas ? s.replicas->desired : job.spec.replicas.desired.value_or(0);
  out += "; desired " + std::to_string(desired);
  if (s.replicas) {
    out += ", ready " + std::to_string(s.replicas->ready) + ", spares " + std::to_string(s.replicas->spares);
    if (s.replicas->pending > 0) out += ", pending " + std::to_string(s.replicas->pending);
  }
  if (job.spec.replicas.min || job.spec.replicas.max) {
    out += " (min " + (job.spec.replicas.min ? std::to_string(*job.spec.replicas.min) : std::string("-")) + ", max " +
           (job.spec.replicas.max ? std::to_string(*job.spec.replicas.max) : std::string("-")) + ")";
  }
  return out;
}

}  // namespace

std::string FormatJobStatus(const api::TrainingJob& job, const std::vector<EventRecord>& job_events,
                            Clock::time_point now) {
  const auto& s = job.status;
  std::string out = "TrainingJob " + job.metadata.ns + "/" + job.metadata.name + "\n";
  out += Field("Phase", s.phase.empty() ? std::string(api::phase::kPending) : s.phase);
  for (const auto& c : s.conditions) {
    // The reason the job is not running (or why it ended), when it says more than the phase.
    const bool ended = (c.type == api::condition::kFailed || c.type == api::condition::kSucceeded) &&
                       c.status == api::condition_status::kTrue;
    const bool stalled = c.type == api::condition::kRunning && c.status == api::condition_status::kFalse &&
                         s.phase != api::phase::kSucceeded && s.phase != api::phase::kFailed;
    if (ended || stalled) out += Field("", c.reason + ": " + c.message);
  }
  out += Field("Workers", Workers(job));
  const auto max_restarts = job.spec.elastic_policy.max_restarts;
  out += Field("Restarts", std::to_string(s.restart_count) + " (maxRestarts " +
                               (max_restarts ? std::to_string(*max_restarts) : std::string("default")) + ")");
  out += Field("Started", s.start_time.empty() ? "not yet" : Ago(s.start_time, now));
  if (!s.completion_time.empty()) out += Field("Finished", Ago(s.completion_time, now));
  std::vector<std::string> goodput = FormatGoodput(s.goodput);
  for (size_t i = 0; i < goodput.size(); ++i) out += Field(i == 0 ? "Goodput" : "", goodput[i]);
  std::optional<Clock::time_point> end;
  if (!s.completion_time.empty()) end = ParseRfc3339(s.completion_time);
  out += "Generations:\n";
  const std::string table = FormatTimeline(BuildTimeline(job_events, s.membership, end, now));
  for (size_t from = 0; from < table.size();) {
    size_t nl = table.find('\n', from);
    if (nl == std::string::npos) nl = table.size();
    out += "  " + table.substr(from, nl - from) + "\n";
    from = nl + 1;
  }
  return out;
}

}  // namespace ringmaster::kubectl_plugin
