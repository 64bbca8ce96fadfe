// kubectl-ringmaster's commands: each reads (and kill and drill write) through the Cluster and prints its
// result on `out`.
//
//   status JOB            phase, workers, restarts, start and age, goodput, the generations as a timeline
//   events JOB            the Events of the job and of its worker pods, oldest first
//   kill JOB --rank R     the pod holding rank R deleted at once (grace 0, uid precondition)
//   drill JOB [--rank R]  a kill, then detection and recovery timed (drill_tracker.h), up to `timeout`
//
// Errors: one line each for a person (cluster_reads.h); drill: DeadlineExceeded naming what it still waited for,
// FailedPrecondition when the job finished or was deleted first. Thread-safety: one command per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "base/status.h"
#include "operator/kubectl_plugin/cluster_reads.h"

namespace ringmaster::kubectl_plugin {

Status RunStatus(const Cluster& c, const std::string& job, std::ostream& out);
Status RunEvents(const Cluster& c, const std::string& job, std::ostream& out);
Status RunKill(const Cluster& c, const std::string& job, int32_t rank, std::ostream& out);
// `rank` -1: a random rank of the current membership.
Status RunDrill(const Cluster& c, const std::string& job, int32_t rank, std::chrono::seconds timeout,
                std::ostream& out);

}  // namespace ringmaster::kubectl_plugin
