// The kubelet's restart decisions for the pod runner's image mode (pod_runner.h): which restartPolicy a
// pod has, whether a container that exited is restarted in place, and the back-off before it is.
//
// Back-off: the kubelet waits 10 s before a container's first restart and doubles that up to 5 min,
// starting over once a container ran 10 min. The runner uses the same shape scaled for tests
// (kTestRestartBackOff): 1 s doubling to 10 s, starting over once a container ran 10 s.
// Pure functions; thread-safe.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::testing {

enum class RestartPolicy { kAlways, kOnFailure, kNever };

// spec.restartPolicy ("" is Always, the apiserver's default). InvalidArgument for another value.
StatusOr<RestartPolicy> ParseRestartPolicy(const nlohmann::json& pod);

// Whether a container that exited by itself (or was killed by its liveness probe) with `exit_code` is
// restarted: Always for any exit, OnFailure for a non-zero one, Never never.
bool ShouldRestart(RestartPolicy policy, int exit_code);

struct RestartBackOff {
  std::chrono::milliseconds initial, max;
  std::chrono::milliseconds reset_after;  // a container that ran this long starts the back-off over
};
inline constexpr RestartBackOff kKubeletRestartBackOff{std::chrono::seconds(10), std::chrono::minutes(5),
                                                       std::chrono::minutes(10)};
inline constexpr RestartBackOff kTestRestartBackOff{std::chrono::seconds(1), std::chrono::seconds(10),
                                                    std::chrono::seconds(10)};

// The wait before restarting a container that ran for `ran`, when the wait before its previous restart
// was `previous` (0 for none): `initial` for a first restart or after a run of `reset_after` or more,
// else twice `previous`, at most `max`.
std::chrono::milliseconds NextRestartDelay(const RestartBackOff& backoff, std::chrono::milliseconds previous,
                                           std::chrono::milliseconds ran);

}  // namespace ringmaster::testing
