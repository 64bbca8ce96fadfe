#include "operator/controller/operator_metrics.h"

#include "metrics/buckets.h"

namespace ringmaster::controller {

namespace {
double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

OperatorMetrics::OperatorMetrics(prometheus::Registry& r, const std::string& controller, const std::string& lease)
    : reconciles_(prometheus::BuildCounter()
                      .Name("controller_runtime_reconcile_total")
                      .Help("Total number of reconciliations per controller")
                      .Register(r)),
      controller_(controller),
      errors_(prometheus::BuildCounter()
                  .Name("controller_runtime_reconcile_errors_total")
                  .Help("Total number of reconciliation errors per controller")
                  .Register(r)
                  .Add({{"controller", controller}})),
      reconcile_time_(prometheus::BuildHistogram()
                          .Name("controller_runtime_reconcile_time_seconds")
                          .Help("Length of time per reconciliation per controller")
                          .Register(r)
                          .Add({{"controller", controller}}, metrics::ExponentialBuckets(0.0005, 2, 16))),
      max_concurrent_(prometheus::BuildGauge()
                          .Name("controller_runtime_max_concurrent_reconciles")
                          .Help("Maximum number of concurrent reconciles per controller")
                          .Register(r)
                          .Add({{"controller", controller}})),
      active_workers_(prometheus::BuildGauge()
                          .Name("controller_runtime_active_workers")
                          .Help("Number of currently used workers per controller")
                          .Register(r)
                          .Add({{"controller", controller}})),
      membership_changes_(prometheus::BuildCounter()
                              .Name("ringmaster_membership_changes_total")
                              .Help("Published membership generations by reason.")
                              .Register(r)),
      publish_latency_(prometheus::BuildHistogram()
                           .Name("ringmaster_membership_publish_latency_seconds")
                           .Help("Time from the event that dirtied a job to its new membership in status.")
                           .Register(r)
                           .Add({}, metrics::ExponentialBuckets(0.005, 2, 14))),
      recovery_seconds_(prometheus::BuildHistogram()
                            .Name("ringmaster_trainingjob_recovery_seconds")
                            .Help("Time from a worker's failure to the first step its job committed after it.")
                            .Register(r)
                            .Add({}, metrics::ExponentialBuckets(0.5, 2, 12))),  // 0.5 s .. ~17 min
      leader_(prometheus::BuildGauge()
                  .Name("leader_election_master_status")
                  .Help("Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
                        "indicates master. 'name' is the string used to identify the lease.")
                  .Register(r)
                  .Add({{"name", lease}})) {
  // Every result from the start, so rate() and increase() see the first one.
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    reconciles_.Add({{"controller", controller_}, {"result", result}});
  }
}

void OperatorMetrics::Reconciled(const std::string& result, std::chrono::nanoseconds elapsed) {
  reconciles_.Add({{"controller", controller_}, {"result", result}}).Increment();
  if (result == "error") errors_.Increment();
  reconcile_time_.Observe(Seconds(elapsed));
}

void OperatorMetrics::MembershipPublished(const std::string& reason) {
  membership_changes_.Add({{"reason", reason}}).Increment();
}

void OperatorMetrics::PublishLatency(std::chrono::nanoseconds latency) { publish_latency_.Observe(Seconds(latency)); }

void OperatorMetrics::RecoveryCompleted(double seconds) { recovery_seconds_.Observe(seconds); }

}  // namespace ringmaster::controller
