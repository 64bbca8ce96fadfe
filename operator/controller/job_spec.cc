#include "controller/job_spec.h"

#include <algorithm>

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

// Reads an optional integer at spec[section][key]; InvalidArgument when present but not an integer.
Status ReadInt(const json& spec, const char* section, const char* key, int64_t* out, bool* present = nullptr) {
  if (present) *present = false;
  if (!spec.contains(section) || !spec[section].is_object() || !spec[section].contains(key)) return Status::Ok();
  const json& v = spec[section][key];
  if (!v.is_number_integer()) {
    return InvalidArgumentError(std::string("spec.") + section + "." + key + " must be an integer");
  }
  *out = v.get<int64_t>();
  if (present) *present = true;
  return Status::Ok();
}

}  // namespace

StatusOr<JobSpec> ParseJobSpec(const json& job) {
  if (!job.is_object() || !job.contains("spec") || !job["spec"].is_object()) {
    return InvalidArgumentError("TrainingJob has no spec");
  }
  const json& spec = job["spec"];
  JobSpec out;
  int64_t min = 0, max = 0, desired = 0;
  bool has_min = false, has_max = false, has_desired = false;
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "replicas", "min", &min, &has_min));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "replicas", "max", &max, &has_max));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "replicas", "desired", &desired, &has_desired));
  if (!has_min || !has_max) return InvalidArgumentError("spec.replicas.min and spec.replicas.max are required");
  if (min < 1 || max < min) return InvalidArgumentError("spec.replicas needs 1 <= min <= max");
  out.min_workers = static_cast<int32_t>(min);
  out.max_workers = static_cast<int32_t>(max);
  out.desired_workers = static_cast<int32_t>(has_desired ? std::clamp(desired, min, max) : max);

  int64_t v = 0;
  bool has = false;
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "elasticPolicy", "joinBatchWindowSeconds", &v, &has));
  if (has) out.join_batch_window = std::chrono::seconds(std::max<int64_t>(0, v));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "elasticPolicy", "nodeUnresponsiveSeconds", &v, &has));
  if (has) out.node_unresponsive = std::chrono::seconds(std::max<int64_t>(1, v));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "elasticPolicy", "maxRestarts", &v, &has));
  if (has) out.max_restarts = static_cast<int32_t>(std::max<int64_t>(0, v));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "elasticPolicy", "forceDeleteGraceSeconds", &v, &has));
  if (has) out.force_delete_grace = std::chrono::seconds(std::max<int64_t>(0, v));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "elasticPolicy", "leaveGraceSeconds", &v, &has));
  if (has) out.leave_grace = std::chrono::seconds(std::max<int64_t>(0, v));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "runPolicy", "ttlSecondsAfterFinished", &v, &has));
  if (has) out.ttl_after_finished = std::chrono::seconds(std::max<int64_t>(0, v));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "runPolicy", "activeDeadlineSeconds", &v, &has));
  if (has) out.active_deadline = std::chrono::seconds(std::max<int64_t>(1, v));
  if (spec.contains("runPolicy") && spec["runPolicy"].is_object()) {
    const json& rp = spec["runPolicy"];
    if (rp.contains("suspend")) {
      if (!rp["suspend"].is_boolean()) return InvalidArgumentError("spec.runPolicy.suspend must be true or false");
      out.suspend = rp["suspend"].get<bool>();
    }
    std::string policy = rp.contains("cleanPodPolicy") && rp["cleanPodPolicy"].is_string() ? rp["cleanPodPolicy"].get<std::string>() : "Running";
    if (policy == "All") out.clean_pod_policy = CleanPodPolicy::kAll;
    else if (policy == "None") out.clean_pod_policy = CleanPodPolicy::kNone;
    else if (policy == "Running") out.clean_pod_policy = CleanPodPolicy::kRunning;
    else return InvalidArgumentError("spec.runPolicy.cleanPodPolicy must be All, Running or None");
  }
  return out;
}

}  // namespace ringmaster::controller
