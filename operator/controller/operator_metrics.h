// The operator's own Prometheus metrics, kept as events happen (the client library adds request, watch
// and queue metrics; job_state_metrics.h computes the jobs' state at scrape time):
//   controller_runtime_reconcile_total{controller,result}     counter: success | error | requeue | requeue_after
//   controller_runtime_reconcile_errors_total{controller}     counter
//   controller_runtime_reconcile_time_seconds{controller}     histogram
//   controller_runtime_max_concurrent_reconciles{controller}  gauge
//   controller_runtime_active_workers{controller}             gauge
//   ringmaster_membership_changes_total{reason}               counter: published generations
//   ringmaster_membership_publish_latency_seconds             histogram: from the first event that dirtied
//                                                             a job to the status write publishing its generation
//   ringmaster_trainingjob_recovery_seconds                   histogram: from a worker's failure to the first step
//                                                             its job committed after it (goodput.h), observed once
//                                                             per recovery, when the status accounting it is written
//   leader_election_master_status{name}                       gauge: 1 while this replica leads (always,
//                                                             without leader election), else 0
// Thread-safety: thread-safe. Ownership: borrows the registry, which must outlive this object.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>

namespace ringmaster::controller {

class OperatorMetrics {
 public:
  // `controller`: the controller label ("trainingjob"); `lease`: the leader election's name label.
  OperatorMetrics(prometheus::Registry& registry, const std::string& controller = "trainingjob",
                  const std::string& lease = "ringmaster-operator");

  // One reconcile finished with `result` (success, error, requeue, requeue_after) after `elapsed`.
  void Reconciled(const std::string& result, std::chrono::nanoseconds elapsed);
  void SetMaxConcurrentReconciles(int n) { max_concurrent_.Set(n); }
  void WorkerBusy() { active_workers_.Increment(); }
  void WorkerIdle() { active_workers_.Decrement(); }
  // A new membership generation was published for `reason`.
  void MembershipPublished(const std::string& reason);
  // ... `latency` after the first event that dirtied the job.
  void PublishLatency(std::chrono::nanoseconds latency);
  // A job recovered from a failure `seconds` after it (status.goodput.lastRecoverySeconds, newly accounted).
  void RecoveryCompleted(double seconds);
  void SetLeading(bool leading) { leader_.Set(leading ? 1 : 0); }

 private:
  prometheus::Family<prometheus::Counter>& reconciles_;
  const std::string controller_;
  prometheus::Counter& errors_;
  prometheus::Histogram& reconcile_time_;
  prometheus::Gauge& max_concurrent_;
  prometheus::Gauge& active_workers_;
  prometheus::Family<prometheus::Counter>& membership_changes_;
  prometheus::Histogram& publish_latency_;
  prometheus::Histogram& recovery_seconds_;
  prometheus::Gauge& leader_;
};

}  // namespace ringmaster::controller
