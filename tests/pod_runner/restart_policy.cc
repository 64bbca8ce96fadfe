#include "tests/pod_runner/restart_policy.h"

#include <algorithm>

#include "base/json_path.h"

namespace ringmaster::testing {

StatusOr<RestartPolicy> ParseRestartPolicy(const nlohmann::json& pod) {
  const std::string policy = StringAt(pod, {"spec", "restartPolicy"});
  if (policy.empty() || policy == "Always") return RestartPolicy::kAlways;
  if (policy == "OnFailure") return RestartPolicy::kOnFailure;
  if (policy == "Never") return RestartPolicy::kNever;
  return InvalidArgumentError("restartPolicy " + policy + " is not Always, OnFailure or Never");
}

bool ShouldRestart(RestartPolicy policy, int exit_code) {
  switch (policy) {
    case RestartPolicy::kAlways: return true;
    case RestartPolicy::kOnFailure: return exit_code != 0;
    case RestartPolicy::kNever: return false;
  }
  return false;
}

std::chrono::milliseconds NextRestartDelay(const RestartBackOff& backoff, std::chrono::milliseconds previous,
                                           std::chrono::milliseconds ran) {
  if (previous <= std::chrono::milliseconds(0) || ran >= backoff.reset_after) return backoff.initial;
  return std::min(previous * 2, backoff.max);
}

}  // namespace ringmaster::testing
