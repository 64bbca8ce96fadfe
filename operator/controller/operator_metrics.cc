#include "controller/operator_metrics.h"

namespace ringmaster::controller {

OperatorMetrics::OperatorMetrics(metrics::Registry& registry)
    : reconciles(registry.AddCounterFamily("ringmaster_reconcile_total", "Reconciles of TrainingJobs by result.")),
      reconcile_seconds(registry.AddHistogramFamily("ringmaster_reconcile_duration_seconds", "Time spent in one reconcile.")
                            .Add({}, metrics::ExponentialBuckets(0.0005, 2, 16))),
      jobs_by_phase(registry.AddGaugeFamily("ringmaster_trainingjobs", "TrainingJobs by phase.")),
      membership_changes(registry.AddCounterFamily("ringmaster_membership_changes_total",
                                                   "Published membership generations by reason.")),
      publish_latency(registry
                          .AddHistogramFamily("ringmaster_membership_publish_latency_seconds",
                                              "Time from the event that dirtied a job to its new membership in status.")
                          .Add({}, metrics::ExponentialBuckets(0.005, 2, 14))) {}

}  // namespace ringmaster::controller
