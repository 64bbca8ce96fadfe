// Which informer events are bad news for a job, and so jump the controller's queue (WorkQueue's high
// priority) ahead of routine progress and new jobs' first reconciles.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

namespace ringmaster::controller {

// Whether a pod's change (`old_pod` null for an add) is bad news for its job, which may have to publish a
// generation without it: the pod ended (Failed, Succeeded, Unknown), is being deleted, is marked for disruption
// (DisruptionTarget=True) or lost its readiness. A pod created, scheduled or become Ready is routine progress:
// hurrying those only writes more intermediate statuses and re-plans creates the cache has not caught up with.
// Reads only fields the slim pod keeps (cache_transforms.h).
bool PodInTrouble(const nlohmann::json* old_pod, const nlohmann::json& pod);

}  // namespace ringmaster::controller
