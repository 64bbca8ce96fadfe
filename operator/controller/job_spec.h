// A TrainingJob's spec as the controller uses it: taken from the decoded api::TrainingJobSpec once per
// reconcile, with defaults applied (the CRD's schema defaults them too; a job written before a default
// existed still gets it here) and values clamped to what the controller can act on.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "api/training_job.h"
#include "base/status.h"

namespace ringmaster::controller {

enum class CleanPodPolicy { kAll, kRunning, kNone };

struct JobSpec {
  int32_t min_workers = 1;
  int32_t max_workers = 1;
  int32_t desired_workers = 1;  // spec.replicas.desired, else max
  // spec.replicas.multipleOf: min, max and desired are multiples of it, and so is every published world.
  int32_t multiple_of = 1;
  std::chrono::seconds join_batch_window{10};
  std::chrono::seconds node_unresponsive{30};
  int32_t max_restarts = 10;
  std::chrono::seconds force_delete_grace{30};
  // How long a worker dropped from membership by a scale-down may take to exit before its pod is deleted.
  std::chrono::seconds leave_grace{60};
  bool suspend = false;
  std::optional<std::chrono::seconds> ttl_after_finished;
  std::optional<std::chrono::seconds> active_deadline;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
};

// InvalidArgument naming the field when the spec is not usable (replicas missing or not 1 <= min <= max,
// multipleOf below 1 or not dividing min and max, an unknown cleanPodPolicy); a desired count that is not
// a multiple is rounded down to one. The CRD's validation normally prevents that; this guards against objects
// written around it. Field types were checked by api::DecodeTrainingJob.
StatusOr<JobSpec> ParseJobSpec(const api::TrainingJobSpec& spec);

}  // namespace ringmaster::controller
