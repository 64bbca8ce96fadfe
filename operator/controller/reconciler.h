// TrainingJobReconciler: one reconcile per job key. Reads the job, its pods and the nodes from the
// informer caches, asks PlanJob what should change, and carries the plan out through the client:
// status first (optimistic concurrency, so a generation is never published twice), then pods, then
// events. Level-based and idempotent: running it again with nothing new changes nothing.
//
// Errors: Reconcile returns the result the work loop acts on (the one place the retry rule lives):
// an error → rate-limited requeue (a job that cannot be decoded or planned also gets an InvalidSpec
// event; it never stops the loop, and every other job is served); requeue_after → look again then.
// Thread-safety: Reconcile may run on several threads for different keys (the work queue never hands
// one key to two workers). Ownership: borrows the stores, recorder and metrics, which must outlive it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/log.h"
#include "base/status.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/store.h"
#include "operator/controller/applied_intents.h"
#include "operator/controller/created_pods.h"
#include "operator/controller/deleted_pods.h"
#include "operator/controller/job_plan.h"
#include "operator/controller/operator_metrics.h"
#include "operator/controller/written_objects.h"

namespace ringmaster::controller {

// The GroupVersionResource of TrainingJobs.
kube::GroupVersionResource TrainingJobs();

// Informer index names the reconciler relies on.
inline constexpr char kPodsByJobIndex[] = "job";    // pods → "ns/<job-name label>"
inline constexpr char kPodsByNodeIndex[] = "node";  // pods → spec.nodeName
kube::IndexFunc IndexPodsByJob();
kube::IndexFunc IndexPodsByNode();

struct ReconcileResult {
  Status status;  // non-OK: requeue with backoff
  std::optional<std::chrono::nanoseconds> requeue_after;
};

// What the reconciler creates for a job besides its pods, where a cluster may want less.
struct ReconcilerOptions {
  // The per-job NetworkPolicy (BuildWorkerNetworkPolicy). Off for an operator whose RBAC lacks
  // networkpolicies, or a cluster that manages its own policies (--worker-network-policy=false).
  bool worker_network_policy = true;
  // Node taints that announce the node's loss (a spot reclaim notice, a maintenance drain): "key" or
  // "key=value" each (--disruption-taints). A worker on such a node leaves its job as a preempted one does.
  std::vector<std::string> disruption_taints;
};

// Kueue's objects the reconciler reads for queued jobs (queue_admission.h); all null when the cluster does not
// serve Kueue's API (queued jobs then stay suspended, saying why).
struct QueueStores {
  const kube::Store* workloads = nullptr;  // the operator's Workloads (labelled ringmaster.io/job-name)
  const kube::Store* flavors = nullptr;    // ResourceFlavors, by name
};

class TrainingJobReconciler {
 public:
  using NowFn = std::function<std::chrono::system_clock::time_point()>;

  // `peer_reports`: the jobs' peer-reports ConfigMaps (api/peer_report.h).
  TrainingJobReconciler(std::shared_ptr<kube::Client> client, const kube::Store* jobs, const kube::Store* pods,
                        const kube::Store* nodes, const kube::Store* peer_reports, kube::EventRecorder* recorder,
                        OperatorMetrics* metrics, LogSink log, ReconcilerOptions options = {},
                        NowFn now = std::chrono::system_clock::now, QueueStores queue = {});

  ReconcileResult Reconcile(const std::string& key);

  // Called by event handlers when `key` is enqueued: remembers the first time since its last
  // reconcile, for the publish-latency histogram.
  void NoteDirty(const std::string& key);
  // Called by the pod informer's handlers for every event about pod `uid` of job `key`: the cache has caught up
  // with this operator's create of it, if it made one (CreatedPods::Seen).
  void PodSeen(const std::string& key, const std::string& uid) { created_pods_.Seen(key, uid); }
  // Whether pods this operator created for job `key` have not reached the cache yet.
  bool CreatesPending(const std::string& key) const { return created_pods_.Pending(key); }

 private:
  // Reconcile without the metrics: observe, plan, apply. Fills `result`; returns the outcome label
  // of the reconciles metric (success, invalid, requeue, error).
  const char* ReconcileJob(const std::string& key, ReconcileResult& result);
  // Observe: the PlanInput for `job` from the informer stores (its pods by index, all nodes, its peer
  // reports; one that does not decode is logged and left out) at now_().
  PlanInput Observe(const std::string& key, const nlohmann::json& job) const;
  // Apply: owned objects, then the status (a conflict or error stops here), then pods, a queued job's Workload,
  // events and the job's deletion. Fills `result` (first error; requeue_after from the plan, at least 10 ms after
  // `now`); returns the outcome label.
  const char* Apply(const std::string& key, const nlohmann::json& job, const PlanInput& input, const JobPlan& plan,
                    ReconcileResult& result);
  // Writes `status` as the job's .status (optimistic concurrency: the job's resourceVersion), and on a
  // new membership generation records the metrics and a log line. Errors: the client's, unwrapped
  // (Conflict when the job changed since the cache saw it).
  Status WriteStatus(const std::string& key, const nlohmann::json& job, const nlohmann::json& status);
  // Creates and deletes the plan's pods, all of them even after an error; a successful create is recorded in
  // created_pods_ and a successful delete in deleted_pods_, each until the cache shows it. A create the apiserver
  // refuses (quota, PodSecurity, an invalid template) is a Warning Event FailedCreate on the job and is remembered in
  // create_errors_ for the next plan's Running condition, until a reconcile creates all the pods it planned. Errors:
  // the first one; AlreadyExists on create and NotFound/Conflict on delete are not errors.
  Status ApplyPods(const std::string& key, const nlohmann::json& job, const JobPlan& plan);
  // A gang-scheduled job's PodGroup (BuildPodGroup), server-side applied when this process has not applied that
  // intent for this job yet. Errors: the client's; NotFound (the PodGroup CRD is not installed) says what to do.
  Status EnsurePodGroup(const nlohmann::json& job);
  // A queued job's Workload: created when missing (its priority resolved first), else brought in step with the
  // job and the plan (PlanWorkload). Errors: the client's (a Conflict when Kueue wrote it meanwhile: the
  // reconcile repeats); NotFound of a named priority class, as InvalidArgument naming it.
  Status SyncWorkload(const std::string& key, const nlohmann::json& job, const PlanInput& input, const JobPlan& plan);
  // The priority of a new Workload for `job` (queue_admission.h's WorkloadPriority).
  StatusOr<WorkloadPriority> ResolvePriority(const nlohmann::json& job);
  // Deletes the job (background propagation, only this uid). Errors: the client's; NotFound is OK.
  Status DeleteJob(const nlohmann::json& job);
  // Creates the job's Secret, headless Service, NetworkPolicy (when options_ say so), Role, RoleBinding
  // and ServiceAccount (when the template names none), once per job uid per process; AlreadyExists is
  // success, so an operator restart or upgrade adds what is missing and changes nothing that exists.
  // Errors: the first failed create (e.g. Forbidden when RBAC lacks a resource), with what it was.
  Status EnsureOwnedObjects(const nlohmann::json& job);

  // Constant after construction.
  const std::shared_ptr<kube::Client> client_;
  const kube::Store* const jobs_;
  const kube::Store* const pods_;
  const kube::Store* const nodes_;
  const kube::Store* const peer_reports_;
  kube::EventRecorder* const recorder_;
  OperatorMetrics* const metrics_;
  const LogSink log_;
  const ReconcilerOptions options_;
  const NowFn now_;
  const QueueStores queue_;

  // The jobs as this operator last wrote them, until the cache has them (thread-safe itself).
  WrittenObjects written_;
  // The pods this operator created, and those it deleted, until the cache shows it (thread-safe themselves).
  CreatedPods created_pods_;
  // Which jobs' owned objects exist and the PodGroup last applied to each (thread-safe itself).
  AppliedIntents applied_;
  DeletedPods deleted_pods_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> dirty_since_;
  // job key -> why the apiserver last refused one of its pods (PlanInput::create_error)
  std::unordered_map<std::string, std::string> create_errors_;
};

}  // namespace ringmaster::controller
