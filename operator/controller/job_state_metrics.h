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
//   ringmaster_trainingjob_goodput_ratio{namespace,trainingjob}           gauge: status.goodput brought forward to
//                                                                          the scrape (LiveGoodput, goodput.h): the
//                                                                          productive seconds up to asOf plus, while
//                                                                          the job steps in its accounted generation,
//                                                                          the time since, weighted by world/desired,
//                                                                          over the wall seconds up to now
//   ringmaster_trainingjob_lost_seconds_total{namespace,trainingjob,phase}  counter: status.goodput.lostSeconds, phase
//                                                                          detect, reschedule, rebuild, restore, replay
//   ringmaster_trainingjob_failures_total{namespace,trainingjob}           counter: status.goodput.failures
// (the goodput series only for jobs with a status.goodput: once a generation was published).
// Only a leading, synced controller reports (`active`): a standby's empty cache would say "no jobs".
//
// Memory: a scrape decodes one job at a time into a small row (its labels and numbers, ~250 bytes), then
// builds, serializes and drops one family at a time (metrics::FamilyStream): at 10,000 jobs a scrape holds
// the rows and one family, not 170,000 series.
//
// Thread-safety: Collect() may run on any thread (the store is thread-safe). Ownership: borrows the
// store; `active` and `now` are called on every Collect; all must stay valid while the object can be collected.
#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <functional>
#include <vector>

#include "kube/store.h"
#include "metrics/family_stream.h"

namespace ringmaster::controller {

class JobStateMetrics : public metrics::FamilyStream {
 public:
  using NowFn = std::function<std::chrono::system_clock::time_point()>;
  JobStateMetrics(const kube::Store* jobs, std::function<bool()> active, NowFn now = std::chrono::system_clock::now);
  void CollectEach(const Emit& emit) const override;

 private:
  const kube::Store* const jobs_;
  const std::function<bool()> active_;
  const NowFn now_;
};

}  // namespace ringmaster::controller
