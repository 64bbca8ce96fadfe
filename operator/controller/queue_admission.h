// Kueue's external-framework route for TrainingJobs. A job labelled kueue.x-k8s.io/queue-name is queued:
// the operator is the controller of its Workload (kueue.x-k8s.io/v1beta2) -- it creates it, keeps it in step
// with the job, and does the job controller's part of Kueue's protocol (jobframework/reconciler.go):
//   - one pod set "workers" of desired + spares pods, minCount = spec.replicas.min when that is fewer, so
//     partial admission gives an elastic job what fits;
//   - the job runs only while its Workload is admitted, its world capped at the admitted count, its pods
//     carrying the admitted flavours' node labels and tolerations;
//   - when Kueue evicts the Workload (preemption, a deactivation, a stopped queue), the job suspends (its
//     workers commit and leave) and, once no pod of it is left, the operator gives the quota back (clears the
//     admission, QuotaReserved=False, Requeued), so Kueue can admit it again;
//   - a finished job marks its Workload Finished, which releases the quota;
//   - while not holding quota the Workload follows the job's size (kubectl scale), and spec.active follows
//     spec.runPolicy.suspend.
// The plan's side is pure (ObserveAdmission, PlanWorkload); the reconciler does the reads and writes.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "kube/resource.h"
#include "kube/store.h"
#include "operator/controller/job_spec.h"

namespace ringmaster::controller {

// Kueue's names (its API is kueue.x-k8s.io/v1beta2, Kueue v0.15 and later).
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kWorkloadPriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr std::string_view kWorkloadJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr std::string_view kWorkerPodSet = "workers";

kube::GroupVersionResource Workloads();
kube::GroupVersionResource ResourceFlavors();          // cluster-scoped
kube::GroupVersionResource WorkloadPriorityClasses();  // cluster-scoped
kube::GroupVersionResource PriorityClasses();          // scheduling.k8s.io/v1, cluster-scoped

// The job's LocalQueue (its kueue.x-k8s.io/queue-name label); "" when the job is not queued.
std::string QueueNameOf(const nlohmann::json& job);
// The name of the job's Workload: "trainingjob-<name>-<first 5 characters of its uid>", at most 253 characters
// (one per incarnation of the name, as Kueue's own jobs have).
std::string WorkloadNameFor(const nlohmann::json& job);

// What the plan needs from a queued job's Workload.
struct QueueAdmission {
  std::string queue;         // the LocalQueue
  bool kueue_served = true;  // false: the cluster does not serve Kueue's Workload API
  bool workload_exists = false;
  bool quota_reserved = false;
  bool admitted = false;  // Admitted=True with an admission, and not evicted: the job may run
  bool evicted = false;   // Evicted=True: the job must stop (its reason in `reason`)
  std::string cluster_queue;
  int32_t admitted_count = 0;   // pods the admission covers (partial admission: fewer than asked)
  std::string reason, message;  // Kueue's words: why it is not admitted, or why it was evicted
  nlohmann::json node_selector = nlohmann::json::object();  // from the admitted flavours
  nlohmann::json tolerations = nlohmann::json::array();
  std::string missing_flavor;  // an admitted flavour the cache does not have (yet): not startable
};

// The admission of a queued job from its Workload (null when it has none) and the ResourceFlavors
// (a store keyed by name).
QueueAdmission ObserveAdmission(std::string queue, const nlohmann::json* workload, const kube::Store& flavors);

// Adds the admission's node selector and tolerations to a worker pod (Kueue's RunWithPodSetsInfo): a key the
// template already sets keeps the template's value only when equal; the flavour's wins otherwise.
void ApplyAdmissionToPod(const QueueAdmission& admission, nlohmann::json* pod);

// The Workload's priority, resolved by the reconciler: a WorkloadPriorityClass named by the job's
// kueue.x-k8s.io/priority-class label, else the PriorityClass of the pod template's priorityClassName.
struct WorkloadPriority {
  nlohmann::json class_ref;  // {group, kind, name}, null when neither is set
  int32_t value = 0;
};

// A new Workload for `job` (owned by it, controller reference). Errors: InvalidArgument when the job has no
// spec.template.
StatusOr<nlohmann::json> BuildWorkload(const nlohmann::json& job, const JobSpec& spec,
                                       const WorkloadPriority& priority);

// The writes that bring the job's existing Workload in step (each a merge patch carrying the Workload's
// resourceVersion, so a concurrent change by Kueue is a Conflict and the reconcile repeats).
struct WorkloadPlan {
  std::optional<nlohmann::json> spec_patch;    // pod-set size while holding no quota; spec.active
  std::optional<nlohmann::json> status_patch;  // give back an evicted admission; Finished
  std::string why;                             // for the log
};

// `phase` is the job's phase after this reconcile; `pods_left` whether any pod of the job still exists
// (a terminating one included: its GPUs are not free yet). `now` is RFC 3339.
WorkloadPlan PlanWorkload(const nlohmann::json& job, const JobSpec& spec, const nlohmann::json& workload,
                          const std::string& phase, bool pods_left, const std::string& now);

}  // namespace ringmaster::controller
