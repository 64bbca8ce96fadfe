// The heart of the controller: from one TrainingJob, its pods and the nodes they run on, decide what
// should change — pods to create and delete, the status to write, the events to record, and when to
// look again. Level-based and idempotent: the same observations give the same plan, and a plan that
// was carried out yields an empty one. Pure (no I/O, the time is an input); thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/hang_report.h"
#include "api/peer_report.h"
#include "api/progress_report.h"
#include "base/status.h"
#include "operator/controller/job_spec.h"
#include "operator/controller/queue_admission.h"

namespace ringmaster::controller {

using Clock = std::chrono::system_clock;

struct NodeState {
  bool ready = true;
  // When its Ready condition last left True (valid when !ready).
  Clock::time_point not_ready_since{};
  // The first of the operator's disruption taints (--disruption-taints) the node carries, as "key=value:effect";
  // empty when none. Its workers leave the job at their next step boundary, as a preempted worker does.
  std::string disruption_taint;
};

struct PodDeletion {
  std::string name;
  std::string uid;     // precondition: delete only this incarnation
  bool force = false;  // grace period 0: its node is gone or it overstayed the grace
  std::string why;
};

struct JobEvent {
  std::string type;  // Normal or Warning
  std::string reason;
  std::string message;
};

struct JobPlan {
  std::vector<nlohmann::json> creates;  // worker pods to create
  std::vector<PodDeletion> deletes;
  std::optional<nlohmann::json> status;  // the new .status, when it differs from the job's
  std::vector<JobEvent> events;
  bool delete_job = false;                      // TTL after finish has passed
  std::optional<Clock::time_point> requeue_at;  // look again then, even if nothing changes

  bool empty() const { return creates.empty() && deletes.empty() && !status && events.empty() && !delete_job; }
};

struct PlanInput {
  nlohmann::json job;
  std::vector<nlohmann::json> pods;        // this job's worker pods (by label), any phase
  std::map<std::string, NodeState> nodes;  // by name; a node absent here does not exist
  Clock::time_point now;
  std::vector<api::PeerReport> peer_reports;  // the job's (api/peer_report.h); members cut off are removed
  // Set for a queued job (kueue.x-k8s.io/queue-name, queue_admission.h): it runs only while admitted, capped at
  // the admitted count, its pods on the admitted flavours; otherwise it is suspended.
  std::optional<QueueAdmission> queue;
  // Why the apiserver refused the last attempt to create one of the job's worker pods (quota, PodSecurity,
  // an invalid template), in its words; empty once all planned pods were created. The Running condition
  // names it (reason FailedCreate) while the job has fewer members than it needs.
  std::string create_error;
  // The job's newest progress report (api/progress_report.h), folded into status.goodput (goodput.h).
  std::optional<api::ProgressReport> progress = std::nullopt;
  // The job's hang reports (api/hang_report.h): one about the current generation from one of its members publishes
  // the next generation with reason Hung (counted in status.hangs and status.goodput); others are stale.
  std::vector<api::HangReport> hang_reports = {};
};

// Errors: InvalidArgument when the job's spec or status cannot be read (not retryable; the reconciler
// records it as a condition and waits for the object to change).
StatusOr<JobPlan> PlanJob(const PlanInput& input);

// The spec in effect for a queued job: its world capped at what Kueue admitted (unchanged when not queued).
JobSpec AdmittedSpec(const JobSpec& spec, const std::optional<QueueAdmission>& queue);

// The replacement backoff after `restarts` failures within the last 10 minutes: 1 s, 2 s, 4 s, ... capped
// at 60 s.
std::chrono::seconds ReplacementBackoff(int32_t restarts);

}  // namespace ringmaster::controller
