// TrainingJobController: the informers (TrainingJobs, their pods, nodes, their peer reports, and Kueue's Workloads
// and ResourceFlavors where the cluster serves Kueue's API), the work queue and the
// worker threads that run TrainingJobReconciler — controller-runtime's Controller for one kind.
// Event handlers only enqueue job keys (changes ahead of routine resyncs); the work loop applies the one retry rule.
// Thread-safety: Start and Stop may run on different threads (Stop ends a Start still waiting for its caches);
// Synced() from any. Ownership: shares the client; borrows
// the recorder and metrics, which must outlive it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "kube/client.h"
#include "kube/client_metrics.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/workqueue.h"
#include "operator/controller/job_state_metrics.h"
#include "operator/controller/operator_metrics.h"
#include "operator/controller/reconciler.h"

namespace ringmaster::controller {

struct ControllerOptions {
  std::string watch_namespace;  // "" = every namespace
  int workers = 4;
  std::chrono::seconds resync_period{300};
  ReconcilerOptions reconciler;                         // what is created per job besides pods
  std::shared_ptr<kube::ClientMetrics> client_metrics;  // optional
  LogSink log = StderrLogSink("ringmaster-kube");
};

class TrainingJobController {
 public:
  TrainingJobController(std::shared_ptr<kube::Client> client, kube::EventRecorder* recorder, OperatorMetrics* metrics,
                        ControllerOptions options);
  ~TrainingJobController();  // Stop()s
  TrainingJobController(const TrainingJobController&) = delete;
  TrainingJobController& operator=(const TrainingJobController&) = delete;

  // Asks whether the cluster serves Kueue's Workload API (queued jobs need it; looked at once: installing Kueue
  // later needs an operator restart), starts the informers, waits for their caches, then starts the workers.
  // Errors: DeadlineExceeded when the caches do not sync within `sync_timeout` (e.g. the CRD is not installed).
  Status Start(std::chrono::seconds sync_timeout = std::chrono::seconds(60));
  // Drains the queue -- work in progress may finish, for at most `drain_timeout` -- then cancels the client's
  // requests (RestClient::Cancel: what is still in flight returns kCancelled at once; the client serves no one
  // afterwards, so it must be this controller's own), logs how many reconciles it abandoned, and stops the workers
  // and informers. Idempotent.
  void Stop(std::chrono::milliseconds drain_timeout = std::chrono::seconds(10));
  bool Synced() const { return synced_.load(); }
  // The jobs' state (JobStateMetrics) from this controller's cache, reported while it is synced. Register
  // it with the metrics server; it borrows the controller, so stop serving it before the controller goes.
  std::shared_ptr<prometheus::Collectable> StateMetrics() const { return state_metrics_; }

 private:
  // A change to `key`'s job (created, edited, its Workload admitted): queued ahead of routine keys. Before the
  // caches have synced, what they deliver is their initial state: routine.
  void Enqueue(const std::string& key);
  // Bad news about `key`'s running work (a pod that failed, is being deleted or lost readiness, a peer's
  // report, a node that changed): ahead of job changes too (WorkQueue's high priority), so a failure never
  // waits behind thousands of new jobs' first reconciles.
  void EnqueueUrgent(const std::string& key);
  // Both: routine before the caches have synced, else marked dirty and queued in the lane asked for.
  void EnqueueChange(const std::string& key, bool urgent);
  // A routine look at `key` (a resync, the initial lists): behind every change in the queue (WorkQueue's low
  // priority), so a failure never waits behind thousands of them; not counted for the publish latency.
  void EnqueueRoutine(const std::string& key);
  void EnqueueJobsOnNode(const std::string& node);
  void Work();

  // Constant after construction.
  const ControllerOptions options_;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<kube::WorkQueue> queue_;
  std::unique_ptr<kube::Informer> jobs_, pods_, nodes_, peer_reports_;
  // Kueue's Workloads (ours, by label) and ResourceFlavors: started when the cluster serves Kueue's API.
  std::unique_ptr<kube::Informer> workloads_, flavors_;
  bool kueue_served_ = false;  // set by Start() before the workers run
  std::unique_ptr<TrainingJobReconciler> reconciler_;
  kube::EventRecorder* const recorder_;
  OperatorMetrics* const metrics_;
  std::shared_ptr<JobStateMetrics> state_metrics_;

  std::atomic<bool> synced_{false};
  std::atomic<bool> stopped_{false};  // written under lifecycle_mu_
  // Orders Start's launch of the workers with Stop, which may run on another thread (leader election's).
  std::mutex lifecycle_mu_;
  std::vector<std::thread> workers_;  // written by Start under lifecycle_mu_ before stopped_, read by Stop after
};

}  // namespace ringmaster::controller
