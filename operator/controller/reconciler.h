// TrainingJobReconciler: one reconcile per job key. Reads the job, its pods and the nodes from the
// informer caches, asks PlanJob what should change, and carries the plan out through the client:
// status first (optimistic concurrency, so a generation is never published twice), then pods, then
// events. Level-based and idempotent: running it again with nothing new changes nothing.
//
// Errors: Reconcile returns the result the work loop acts on (the one place the retry rule lives):
// an error → rate-limited requeue; kInvalid → recorded on the job, no requeue (the job must change);
// requeue_after → look again then.
// Thread-safety: Reconcile may run on several threads for different keys (the work queue never hands
// one key to two workers). Ownership: borrows the stores, recorder and metrics, which must outlive it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "controller/operator_metrics.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "base/log.h"
#include "kube/store.h"

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
  bool invalid = false;  // the job cannot be reconciled as written; wait for it to change
  std::optional<std::chrono::nanoseconds> requeue_after;
};

class TrainingJobReconciler {
 public:
  using NowFn = std::function<std::chrono::system_clock::time_point()>;

  TrainingJobReconciler(std::shared_ptr<kube::Client> client, const kube::Store* jobs, const kube::Store* pods,
                        const kube::Store* nodes, kube::EventRecorder* recorder, OperatorMetrics* metrics,
                        LogSink log, NowFn now = std::chrono::system_clock::now);

  ReconcileResult Reconcile(const std::string& key);

  // Called by event handlers when `key` is enqueued: remembers the first time since its last
  // reconcile, for the publish-latency histogram.
  void NoteDirty(const std::string& key);

 private:
  Status EnsureOwnedObjects(const nlohmann::json& job);
  void UpdatePhaseGauge();

  // Constant after construction.
  const std::shared_ptr<kube::Client> client_;
  const kube::Store* const jobs_;
  const kube::Store* const pods_;
  const kube::Store* const nodes_;
  kube::EventRecorder* const recorder_;
  OperatorMetrics* const metrics_;
  const LogSink log_;
  const NowFn now_;

  std::mutex mu_;
  // Guarded by mu_.
  std::set<std::string> ensured_uids_;  // jobs whose Secret/Service/ServiceAccount/Role/RoleBinding exist
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> dirty_since_;
};

}  // namespace ringmaster::controller
