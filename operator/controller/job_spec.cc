#include "controller/job_spec.h"

#include <algorithm>

namespace ringmaster::controller {

namespace {

// `value` at least `floor`, as seconds; nullopt when absent.
std::optional<std::chrono::seconds> Seconds(const std::optional<int64_t>& value, int64_t floor) {
  if (!value) return std::nullopt;
  return std::chrono::seconds(std::max<int64_t>(floor, *value));
}

}  // namespace

StatusOr<JobSpec> ParseJobSpec(const api::TrainingJobSpec& spec) {
  JobSpec out;
  const auto& r = spec.replicas;
  if (!r.min || !r.max) return InvalidArgumentError("spec.replicas.min and spec.replicas.max are required");
  if (*r.min < 1 || *r.max < *r.min || *r.max > INT32_MAX) return InvalidArgumentError("spec.replicas needs 1 <= min <= max");
  const int64_t multiple = r.multiple_of.value_or(1);
  if (multiple < 1 || multiple > INT32_MAX) return InvalidArgumentError("spec.replicas.multipleOf must be at least 1");
  if (*r.min % multiple != 0 || *r.max % multiple != 0) {
    return InvalidArgumentError("spec.replicas.min and spec.replicas.max must be multiples of spec.replicas.multipleOf (" +
                                std::to_string(multiple) + ")");
  }
  out.min_workers = static_cast<int32_t>(*r.min);
  out.max_workers = static_cast<int32_t>(*r.max);
  out.multiple_of = static_cast<int32_t>(multiple);
  const int64_t desired = r.desired ? std::clamp(*r.desired, *r.min, *r.max) : *r.max;
  // Rounded down, never below min (itself a multiple): more workers than whole groups would only wait.
  out.desired_workers = static_cast<int32_t>(desired - desired % multiple);

  const api::ElasticPolicy& ep = spec.elastic_policy;
  out.join_batch_window = Seconds(ep.join_batch_window_seconds, 0).value_or(out.join_batch_window);
  out.node_unresponsive = Seconds(ep.node_unresponsive_seconds, 1).value_or(out.node_unresponsive);
  if (ep.max_restarts) out.max_restarts = static_cast<int32_t>(std::clamp<int64_t>(*ep.max_restarts, 0, INT32_MAX));
  out.force_delete_grace = Seconds(ep.force_delete_grace_seconds, 0).value_or(out.force_delete_grace);
  out.leave_grace = Seconds(ep.leave_grace_seconds, 0).value_or(out.leave_grace);

  const api::RunPolicy& rp = spec.run_policy;
  out.ttl_after_finished = Seconds(rp.ttl_seconds_after_finished, 0);
  out.active_deadline = Seconds(rp.active_deadline_seconds, 1);
  out.suspend = rp.suspend.value_or(false);
  const std::string& policy = rp.clean_pod_policy.empty() ? "Running" : rp.clean_pod_policy;
  if (policy == "All") out.clean_pod_policy = CleanPodPolicy::kAll;
  else if (policy == "None") out.clean_pod_policy = CleanPodPolicy::kNone;
  else if (policy == "Running") out.clean_pod_policy = CleanPodPolicy::kRunning;
  else return InvalidArgumentError("spec.runPolicy.cleanPodPolicy must be All, Running or None");
  return out;
}

}  // namespace ringmaster::controller
