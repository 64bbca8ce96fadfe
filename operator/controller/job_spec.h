// A TrainingJob's spec as the controller uses it: taken from the decoded api::TrainingJobSpec once per
// reconcile, with defaults applied (the CRD's schema defaults them too; a job written before a default
// existed still gets it here) and values clamped to what the controller can act on.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/names.h"
#include "api/training_job.h"
#include "base/status.h"

namespace ringmaster::controller {

enum class CleanPodPolicy { kAll, kRunning, kNone };

struct JobSpec {
  int32_t min_workers = 1;
  int32_t max_workers = 1;
  int32_t desired_workers = 1;  // spec.replicas.desired, else max
  int32_t spares = 0;           // spec.replicas.spares: Ready workers kept beyond desired, outside the world
  // spec.replicas.multipleOf, in ranks: every published world (in ranks) is a multiple of it, and so are
  // min, max and desired times processes_per_pod.
  int32_t multiple_of = 1;
  // spec.processesPerPod, resolved: ranks per worker pod (default: the worker container's nvidia.com/gpu
  // limit, 1 without GPUs). min/max/desired count pods; the membership counts ranks.
  int32_t processes_per_pod = 1;
  // The nvidia.com/gpu limit of the worker container (the first); 0 without GPUs.
  int32_t gpus_per_pod = 0;
  // Pods per whole group of multiple_of ranks: multiple_of / gcd(multiple_of, processes_per_pod).
  int32_t pods_per_group() const;
  std::chrono::seconds join_batch_window{10};
  std::chrono::seconds node_unresponsive{30};
  int32_t max_restarts = 10;
  std::chrono::seconds force_delete_grace{30};
  // How long a worker dropped from membership by a scale-down may take to exit before its pod is deleted.
  std::chrono::seconds leave_grace{60};
  bool suspend = false;
  std::optional<std::chrono::seconds> ttl_after_finished;
  std::optional<std::chrono::seconds> active_deadline;
  std::optional<std::chrono::seconds> schedule_timeout;  // spec.scheduling.scheduleTimeoutSeconds
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  // spec.runPolicy.keepFailedPods: the newest failed worker pods kept for their logs.
  int32_t keep_failed_pods = 3;
  // spec.ports: the rendezvous store's and the runtime's health/metrics ports (process 0's).
  int32_t rendezvous_port = api::kCoordinatorPort;
  int32_t metrics_port = api::kWorkerHealthPort;
};

// InvalidArgument naming the field when the spec is not usable (replicas missing or not 1 <= min <= max,
// multipleOf below 1 or not dividing min and max times processesPerPod, processesPerPod outside 1..64 or
// above the container's GPU limit, an unknown cleanPodPolicy, keepFailedPods outside 0..20, ports
// outside 1..65535 or less than api::kPortsPerPod apart); a desired count that is not a whole number
// of groups is rounded down to one. The CRD's validation normally prevents that; this guards against objects
// written around it. Field types were checked by api::DecodeTrainingJob.
StatusOr<JobSpec> ParseJobSpec(const api::TrainingJobSpec& spec);

// The nvidia.com/gpu limit of a pod spec's first container (an integer, or a string of digits); 0 when it
// asks for none (or the value is not a count, which the apiserver refuses anyway).
int32_t WorkerContainerGpus(const nlohmann::json& pod_spec);

// The most ranks one pod may run (spec.processesPerPod's maximum in the CRD).
inline constexpr int32_t kMaxProcessesPerPod = 64;
// The most failed pods a job may keep (spec.runPolicy.keepFailedPods's maximum in the CRD): no more than
// status.recentFailures remembers, so a kept pod's failure is never counted twice.
inline constexpr int32_t kMaxKeptFailedPods = 20;
// The most warm spares a job may keep (spec.replicas.spares's maximum in the CRD).
inline constexpr int32_t kMaxSpares = 64;

}  // namespace ringmaster::controller
