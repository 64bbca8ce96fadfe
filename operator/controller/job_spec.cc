#include "operator/controller/job_spec.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "base/json_path.h"

namespace ringmaster::controller {

namespace {

// `value` at least `floor`, as seconds; nullopt when absent.
std::optional<std::chrono::seconds> Seconds(const std::optional<int64_t>& value, int64_t floor) {
  if (!value) return std::nullopt;
  return std::chrono::seconds(std::max<int64_t>(floor, *value));
}

}  // namespace

int32_t JobSpec::pods_per_group() const { return multiple_of / std::gcd(multiple_of, processes_per_pod); }

int32_t WorkerContainerGpus(const nlohmann::json& pod_spec) {
  const nlohmann::json& containers = At(pod_spec, {"containers"});
  if (!containers.is_array() || containers.empty()) return 0;
  const nlohmann::json& gpus = At(containers[0], {"resources", "limits", "nvidia.com/gpu"});
  int64_t n = 0;
  if (gpus.is_number_integer()) {
    n = gpus.get<int64_t>();
  } else if (gpus.is_string()) {
    const std::string& text = gpus.get_ref<const std::string&>();
    if (text.empty() || text.size() > 6 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return 0;
    n = std::stoll(text);
  }
  return static_cast<int32_t>(std::clamp<int64_t>(n, 0, 1'000'000));
}

StatusOr<JobSpec> ParseJobSpec(const api::TrainingJobSpec& spec) {
  JobSpec out;
  const auto& r = spec.replicas;
  if (!r.min || !r.max) return InvalidArgumentError("spec.replicas.min and spec.replicas.max are required");
  if (*r.min < 1 || *r.max < *r.min || *r.max > INT32_MAX)
    return InvalidArgumentError("spec.replicas needs 1 <= min <= max");
  const int64_t multiple = r.multiple_of.value_or(1);
  if (multiple < 1 || multiple > INT32_MAX) return InvalidArgumentError("spec.replicas.multipleOf must be at least 1");
  out.gpus_per_pod = WorkerContainerGpus(At(spec.pod_template, {"spec"}));
  const int64_t processes = spec.processes_per_pod.value_or(std::max<int32_t>(1, out.gpus_per_pod));
  if (processes < 1 || processes > kMaxProcessesPerPod) {
    return InvalidArgumentError(
        "spec.processesPerPod must be between 1 and " + std::to_string(kMaxProcessesPerPod) +
        (spec.processes_per_pod ? "" : " (it defaults to the worker container's nvidia.com/gpu limit)") + ", not " +
        std::to_string(processes));
  }
  if (out.gpus_per_pod > 0 && processes > out.gpus_per_pod) {
    return InvalidArgumentError("spec.processesPerPod (" + std::to_string(processes) +
                                ") exceeds the worker container's nvidia.com/gpu limit (" +
                                std::to_string(out.gpus_per_pod) +
                                "): each rank needs a GPU of its own (NCCL refuses two ranks on one GPU)");
  }
  out.processes_per_pod = static_cast<int32_t>(processes);
  out.multiple_of = static_cast<int32_t>(multiple);
  const int64_t group = out.pods_per_group();
  if (*r.min % group != 0 || *r.max % group != 0) {
    return InvalidArgumentError("spec.replicas.min and spec.replicas.max times spec.processesPerPod (" +
                                std::to_string(processes) + ") must be multiples of spec.replicas.multipleOf (" +
                                std::to_string(multiple) + ")");
  }
  out.min_workers = static_cast<int32_t>(*r.min);
  out.max_workers = static_cast<int32_t>(*r.max);
  const int64_t desired = r.desired ? std::clamp(*r.desired, *r.min, *r.max) : *r.max;
  // Rounded down, never below min (itself whole groups): more workers than whole groups would only wait.
  out.desired_workers = static_cast<int32_t>(desired - desired % group);
  const int64_t spares = r.spares.value_or(0);
  if (spares < 0 || spares > kMaxSpares)
    return InvalidArgumentError("spec.replicas.spares must be between 0 and " + std::to_string(kMaxSpares));
  out.spares = static_cast<int32_t>(spares);

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
  out.schedule_timeout = Seconds(spec.scheduling.schedule_timeout_seconds, 1);
  namespace clean = api::clean_pod_policy;
  const std::string_view policy = rp.clean_pod_policy.empty() ? clean::kRunning : rp.clean_pod_policy;
  if (policy == clean::kAll)
    out.clean_pod_policy = CleanPodPolicy::kAll;
  else if (policy == clean::kNone)
    out.clean_pod_policy = CleanPodPolicy::kNone;
  else if (policy == clean::kRunning)
    out.clean_pod_policy = CleanPodPolicy::kRunning;
  else
    return InvalidArgumentError("spec.runPolicy.cleanPodPolicy must be All, Running or None");
  const int64_t keep = rp.keep_failed_pods.value_or(out.keep_failed_pods);
  if (keep < 0 || keep > kMaxKeptFailedPods)
    return InvalidArgumentError("spec.runPolicy.keepFailedPods must be between 0 and " +
                                std::to_string(kMaxKeptFailedPods));
  out.keep_failed_pods = static_cast<int32_t>(keep);
  const int64_t rendezvous = spec.ports.rendezvous.value_or(out.rendezvous_port);
  const int64_t metrics = spec.ports.metrics.value_or(out.metrics_port);
  for (int64_t port : {rendezvous, metrics}) {
    if (port < 1 || port + api::kPortsPerPod - 1 > 65535)
      return InvalidArgumentError("spec.ports: " + std::to_string(port) + " is not a port that leaves room for " +
                                  std::to_string(api::kPortsPerPod) + " processes (1.." +
                                  std::to_string(65536 - api::kPortsPerPod) + ")");
  }
  if (std::abs(rendezvous - metrics) < api::kPortsPerPod)
    return InvalidArgumentError("spec.ports.rendezvous and spec.ports.metrics must be at least " +
                                std::to_string(api::kPortsPerPod) +
                                " apart: each pod's processes take consecutive ports from both");
  out.rendezvous_port = static_cast<int32_t>(rendezvous);
  out.metrics_port = static_cast<int32_t>(metrics);
  return out;
}

}  // namespace ringmaster::controller
