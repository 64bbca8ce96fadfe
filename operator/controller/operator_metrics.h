// The operator's own Prometheus metrics (the client library adds request, watch and queue metrics).
// Thread-safety: the families are thread-safe. Ownership: references into the Registry, which must
// outlive this struct.
#pragma once

#include <string>

#include "metrics/metrics.h"

namespace ringmaster::controller {

struct OperatorMetrics {
  explicit OperatorMetrics(metrics::Registry& registry);

  // ringmaster_reconcile_total{result="success|requeue|error|invalid"}
  metrics::Family<metrics::Counter>& reconciles;
  // ringmaster_reconcile_duration_seconds
  metrics::Histogram& reconcile_seconds;
  // ringmaster_trainingjobs{phase}
  metrics::Family<metrics::Gauge>& jobs_by_phase;
  // ringmaster_membership_changes_total{reason}
  metrics::Family<metrics::Counter>& membership_changes;
  // ringmaster_membership_publish_latency_seconds: from the first event that dirtied a job to the
  // status write that published its new generation.
  metrics::Histogram& publish_latency;
};

}  // namespace ringmaster::controller
