// A TrainingJob's spec as the controller uses it: parsed once per reconcile, defaults applied
// (the CRD's schema defaults them too; a job written before a default existed still gets it here).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::controller {

enum class CleanPodPolicy { kAll, kRunning, kNone };

struct JobSpec {
  int32_t min_workers = 1;
  int32_t max_workers = 1;
  int32_t desired_workers = 1;  // spec.replicas.desired, else max
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

// InvalidArgument naming the field when the object is not a usable TrainingJob (the CRD's validation
// normally prevents that; this guards against objects written around it).
StatusOr<JobSpec> ParseJobSpec(const nlohmann::json& job);

}  // namespace ringmaster::controller
