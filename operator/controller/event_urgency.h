// Which informer events are bad news for a job, and so jump the controller's queue (WorkQueue's high
// priority) ahead of routine progress and new jobs' first reconciles.
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "kube/store.h"

namespace ringmaster::controller {

// Whether a pod's change (`old_pod` null for an add) is bad news for its job, which may have to publish a
// generation without it: the pod ended (Failed, Succeeded, Unknown), is being deleted, is marked for disruption
// (DisruptionTarget=True) or lost its readiness. A pod created, scheduled or become Ready is routine progress:
// hurrying those only writes more intermediate statuses and re-plans creates the cache has not caught up with.
// Reads only fields the slim pod keeps (cache_transforms.h).
bool PodInTrouble(const nlohmann::json* old_pod, const nlohmann::json& pod);

// Whether a pod's update lets its job start (or grow back): the pod turned Ready (an add is not a turn: a relist
// re-adds every Ready pod at once) and so is every pod of the job
// that is still running (`job_pods`: the job's pods as the cache holds them, this one included; terminating and
// finished ones do not count). The caller adds that no create of the job is still on its way to the cache
// (CreatedPods::Pending): a job whose picture is incomplete would only write an intermediate status. News, not
// progress: in a burst of new jobs a job whose workers are all up must not wait behind the others' first
// reconciles for its membership, and hurrying it writes no extra status (the next status it writes is the one
// that starts it).
// The first half of PodCompletesJob, which needs the pod alone: the update turned it Ready (and it is not leaving).
// Callers check it before reading the job's other pods from the cache (a decode each), which most pod events --
// every status change of a pod already Ready, every add -- then never do.
bool PodTurnedReady(const nlohmann::json* old_pod, const nlohmann::json& pod);
bool PodCompletesJob(const nlohmann::json* old_pod, const nlohmann::json& pod,
                     const std::vector<kube::ObjectPtr>& job_pods);

}  // namespace ringmaster::controller
