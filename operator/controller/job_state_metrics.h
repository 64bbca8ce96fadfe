// JobStateMetrics: the TrainingJobs' state as Prometheus series, computed when Prometheus scrapes, from
// the informer's cache (kube-state-metrics' way): nothing is kept up to date on reconciles, a deleted job
// leaves no stale series, and a scrape costs one pass over the cached jobs.
//   ringmaster_trainingjobs{phase}                                         gauge: jobs per phase, every
//                                                                          phase (Pending, Running, Suspended,
//                                                                          Succeeded, Failed) even at 0
//   ringmaster_trainingjob_info{namespace,trainingjob,phase}               gauge: 1 per job
//   ringmaster_trainingjob_workers_min{namespace,trainingjob}              gauge: spec.replicas.min
//   ringmaster_trainingjob_workers_max{namespace,trainingjob}              gauge: spec.replicas.max
//   ringmaster_trainingjob_workers_desired{namespace,trainingjob}          gauge: status.replicas.desired
//   ringmaster_trainingjob_workers_ready{namespace,trainingjob}            gauge: status.replicas.ready
//   ringmaster_trainingjob_workers_spare{namespace,trainingjob}            gauge: status.replicas.spares
//   ringmaster_trainingjob_membership_generation{namespace,trainingjob}    gauge: the published generation
//   ringmaster_trainingjob_membership_world_size{namespace,trainingjob}    gauge
//   ringmaster_trainingjob_restarts_total{namespace,trainingjob}           counter: status.restartCount
//   ringmaster_trainingjob_max_restarts{namespace,trainingjob}             gauge: spec.elasticPolicy.maxRestarts
//                                                                          (10 where unset); the job fails
//                                                                          once restarts exceed it
// Only a leading, synced controller reports (`active`): a standby's empty cache would say "no jobs".
//
// Thread-safety: Collect() may run on any thread (the store is thread-safe). Ownership: borrows the
// store; `active` is called on every Collect; both must stay valid while the object can be collected.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <vector>

#include "kube/store.h"

namespace ringmaster::controller {

class JobStateMetrics : public prometheus::Collectable {
 public:
  JobStateMetrics(const kube::Store* jobs, std::function<bool()> active);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const kube::Store* const jobs_;
  const std::function<bool()> active_;
};

}  // namespace ringmaster::controller
