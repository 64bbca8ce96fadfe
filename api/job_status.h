// The words of a TrainingJob's status and of the Events the operator records for it: the job's phases,
// its condition types and reasons, and the Kubernetes core/v1 words the operator reads off pods and nodes
// and writes on conditions and Events (pod phases, the Ready condition, True/False, Normal/Warning).
// These strings are the API (kubectl users, dashboards, alerts and tests read them): each is spelled once,
// here, and never changes. A membership change's reason (status.membership.reason, the
// MembershipPublished condition's and its Event's) is named by operator/controller/membership.h's
// ChangeReason; the created-for annotation's values are in api/names.h.
//
// Errors: none. Thread-safety: constants only.
#pragma once

#include <string_view>

namespace ringmaster::api {

// status.phase. A job without one (not reconciled yet) reads as Pending.
namespace phase {
inline constexpr std::string_view kPending = "Pending";  // no membership with workers published (yet, or again)
inline constexpr std::string_view kRunning = "Running";  // a membership with workers is published
// spec.runPolicy.suspend, or a queued job that Kueue has not admitted: no workers, empty membership
inline constexpr std::string_view kSuspended = "Suspended";
inline constexpr std::string_view kSucceeded = "Succeeded";  // final: rank 0 exited 0
inline constexpr std::string_view kFailed = "Failed";        // final: past its deadline or its restart limit
inline constexpr std::string_view kAll[] = {kPending, kRunning, kSuspended, kSucceeded, kFailed};
}  // namespace phase

// status.conditions[].type.
namespace condition {
inline constexpr std::string_view kRunning = "Running";  // True while the members are at least spec.replicas.min
inline constexpr std::string_view kSuspended = "Suspended";
inline constexpr std::string_view kSucceeded = "Succeeded";
inline constexpr std::string_view kFailed = "Failed";
// Its reason is the last membership change's (a ChangeReason's name); it moves on every change.
inline constexpr std::string_view kMembershipPublished = "MembershipPublished";
}  // namespace condition

// status.conditions[].reason, which is also the reason of the Event recorded with it.
namespace reason {
inline constexpr std::string_view kCompleted = "Completed";                        // Succeeded: rank 0 exited 0
inline constexpr std::string_view kDeadlineExceeded = "DeadlineExceeded";          // Failed: activeDeadlineSeconds
inline constexpr std::string_view kRestartLimitExceeded = "RestartLimitExceeded";  // Failed: maxRestarts
// Failed: fewer Ready workers than spec.replicas.min for spec.scheduling.scheduleTimeoutSeconds.
inline constexpr std::string_view kScheduleTimeout = "ScheduleTimeout";
inline constexpr std::string_view kSuspended = "Suspended";  // Suspended=True, Running=False; the empty membership's
inline constexpr std::string_view kResumed = "Resumed";      // Suspended=False
// A queued job (kueue.x-k8s.io/queue-name): Suspended=True while Kueue has not admitted its Workload (Queued) or
// after Kueue evicted it (Evicted; the message carries Kueue's reason: Preempted, Deactivated, ...);
// Suspended=False with Admitted once admitted. The empty membership of an eviction has reason Suspended.
inline constexpr std::string_view kQueued = "Queued";
inline constexpr std::string_view kEvicted = "Evicted";
inline constexpr std::string_view kAdmitted = "Admitted";
inline constexpr std::string_view kWorkersRunning = "WorkersRunning";        // Running=True
inline constexpr std::string_view kBelowMinimum = "BelowMinimum";            // Running=False: fewer members than min
inline constexpr std::string_view kWaitingForWorkers = "WaitingForWorkers";  // Running=False: no members
// Running=False: a worker pod's container cannot start (its image cannot be pulled, or its configuration is
// refused); the message names the pod and the kubelet's reason and message. (A pod the scheduler cannot place is
// no such reason -- capacity may come -- but the WaitingForWorkers/BelowMinimum message names it.)
inline constexpr std::string_view kWorkerCannotStart = "WorkerCannotStart";
// Running=False and a Warning Event: the apiserver refused a worker pod (a ResourceQuota, PodSecurity admission,
// an invalid template); the message carries its words. The operator tries again, backing off.
inline constexpr std::string_view kFailedCreate = "FailedCreate";
// An Event only: spec.scheduling.gang, but the PodGroup cannot be applied (scheduler-plugins is not installed).
inline constexpr std::string_view kGangSchedulingUnavailable = "GangSchedulingUnavailable";
// An Event only: the job's spec or status cannot be read or acted on as written.
inline constexpr std::string_view kInvalidSpec = "InvalidSpec";
// A membership change's reason and its Warning Event (operator/controller/membership.h's ChangeReason::kHung, and
// ringmaster-run's): a member reported no step progress in the current generation (api/hang_report.h), so the
// same members rebuild in a new generation; counted in status.hangs and status.goodput.
inline constexpr std::string_view kHung = "Hung";
}  // namespace reason

// Kubernetes' own words (core/v1).

// A condition's status, on the job's conditions and on pods' and nodes'.
namespace condition_status {
inline constexpr std::string_view kTrue = "True";
inline constexpr std::string_view kFalse = "False";
}  // namespace condition_status

// Event.type.
namespace event_type {
inline constexpr std::string_view kNormal = "Normal";
inline constexpr std::string_view kWarning = "Warning";
}  // namespace event_type

// pod.status.phase; empty before the kubelet first reports.
namespace pod_phase {
inline constexpr std::string_view kPending = "Pending";
inline constexpr std::string_view kRunning = "Running";
inline constexpr std::string_view kSucceeded = "Succeeded";
inline constexpr std::string_view kFailed = "Failed";
}  // namespace pod_phase

// pod.status.containerStatuses[].state.waiting.reason values that do not pass by themselves: the kubelet retries,
// but the container will not start until someone fixes the image or the pod's configuration.
namespace container_waiting {
inline constexpr std::string_view kErrImagePull = "ErrImagePull";
inline constexpr std::string_view kImagePullBackOff = "ImagePullBackOff";
inline constexpr std::string_view kInvalidImageName = "InvalidImageName";
inline constexpr std::string_view kCreateContainerConfigError = "CreateContainerConfigError";
inline constexpr std::string_view kCreateContainerError = "CreateContainerError";
inline constexpr std::string_view kStuck[] = {kErrImagePull, kImagePullBackOff, kInvalidImageName,
                                              kCreateContainerConfigError, kCreateContainerError};
}  // namespace container_waiting

// A pod's condition that the scheduler sets False, with reason Unschedulable, while no node can take it.
inline constexpr std::string_view kPodScheduledCondition = "PodScheduled";
inline constexpr std::string_view kUnschedulableReason = "Unschedulable";
// The condition type of a pod's readiness and of a node's health.
inline constexpr std::string_view kReadyCondition = "Ready";
// The pod condition the control plane sets (True) before it deletes a pod for a disruption: scheduler
// preemption (PreemptionByScheduler), the Eviction API (EvictionByEvictionAPI), taint-based eviction
// (DeletionByTaintManager), node shutdown or pressure (TerminationByKubelet), pod GC (DeletionByPodGC).
inline constexpr std::string_view kDisruptionTargetCondition = "DisruptionTarget";

}  // namespace ringmaster::api
