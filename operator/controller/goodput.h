// Goodput: what failures and membership changes cost a TrainingJob, accounted by the operator in status.goodput
// (api::Goodput) from what it already has -- the membership it publishes, the job's recent failures, its pods, and
// the progress report rank 0 writes when each generation's first step commits (api/progress_report.h).
//
// Definitions (seconds are wall-clock seconds; "weighted" means times world / desired world, both in ranks, capped
// at 1: a generation at full world counts 1, at 7 of 8 counts 7/8):
//   productiveSeconds  time the job was stepping, weighted: from a generation's firstStepAt until the next
//                      generation's publication (changedAt) -- or, when that generation was published for a loss,
//                      until the failure (the world stops stepping when a member dies) -- or the job's completion.
//                      Replayed steps are not subtracted here: they are lostSeconds.replay.
//   wallSeconds        time since status.startTime, less the time the job spent suspended (a suspended or evicted
//                      job is not losing goodput: it is not running).
//   ratio              productiveSeconds / wallSeconds (0 while wallSeconds is 0).
//   asOf               both are accounted up to this time: the moment the job last started or stopped stepping.
//   failures           generations published for a failure (controller::IsFailure): a loss (WorkerFailed,
//                      WorkerRemoved, NodeLost, PeerUnreachable: controller::IsLoss), one per generation however many
//                      members it dropped, or a hang (Hung: a member reported no step progress).
//   lostSeconds        by phase:
//     detect           per failure: from the failure (a failed container's finishedAt, a deleted pod's deletion, its
//                      node's NotReady transition, else its recentFailures time) to the changedAt of the generation
//                      that dropped it.
//     reschedule       after a failure, the stepping time at less than the full world, weighted by the missing part
//                      (7 of 8 for 80 s loses 10 s), through the generations that bring replacements back, until one
//                      restores the full world. 0 when a warm spare took the lost member's place. Not the wait for
//                      a scale-up's workers (closed by a ScaledUp generation), nor after a scale-down or a
//                      disruption; a scale itself (a new desired world) is accounted when it is seen.
//     rebuild          every generation's rebuildSeconds but the job's first (the worker seeing it -> communicators
//                      ready): a join or a scale-up stops the world too, so every change counts, not only failures.
//     restore          likewise restoreSeconds.
//     replay           likewise replayedSteps x stepSeconds (steps done again after restoring an older state).
//     hung             per hang: from the hung generation's last step progress (the earliest reporter's reportedAt
//                      less its stalledSeconds, api/hang_report.h) to the changedAt of the Hung generation; the
//                      generation before stepped until then. Not in detect.
//   lastRecoverySeconds  the newest failure's recovery: the failure -> the first step committed after it (the
//                      firstStepAt of the next generation that stepped; a second failure during a recovery extends
//                      the first). recoveringSince holds the failure's time while a recovery is under way.
//   accountedGeneration  the newest generation whose progress report is accounted.
//
// No churn: the result differs from the previous status.goodput only when a generation is published, a progress
// report for a newer generation arrives, the desired world changes, or the job completes -- never because time
// passed. The live figure between
// those (LiveGoodput, the operator's ringmaster_trainingjob_goodput_ratio) adds the time since asOf.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/membership.h"
#include "api/progress_report.h"
#include "api/training_job.h"

namespace ringmaster::controller {

// When a member's pod was lost, as observed on its pod or node.
struct FailureTime {
  std::string pod, uid;
  std::chrono::system_clock::time_point at;
};

struct GoodputInput {
  std::optional<api::Goodput> previous;  // status.goodput as read
  api::Membership before;                // status.membership as read (generation 0: none yet)
  api::Membership membership;            // status.membership as written now: a publication when newer than before
  int32_t desired_world = 0;             // ranks: desired workers x processes per pod
  // The desired world before this reconcile when it changed now (a scale; status.replicas.desired as read), else 0.
  int32_t desired_world_before = 0;
  std::vector<api::FailureRecord> recent_failures;  // status.recentFailures
  // Members dropped now, as their pods and nodes say; for a Hung generation published now, each member that reported
  // the hang, at the time its stall began.
  std::vector<FailureTime> observed_failures;
  std::optional<api::ProgressReport> report;  // the job's newest progress report, if any
  std::string start_time;                     // status.startTime (reset when a suspended job resumes)
  std::string completion_time;                // status.completionTime: closes the last generation's stepping
  std::chrono::system_clock::time_point now;  // only where a time above is missing or malformed
};

// The new status.goodput from the previous one and what happened since (see the top of this file); nullopt while
// the job has never published a generation and has no previous goodput.
std::optional<api::Goodput> AccountGoodput(const GoodputInput& in);

// The seconds of a recovery that writing `after` over `before` completes (each a status.goodput), or nullopt: a
// recovery was under way before, and a newly accounted progress report ended it. For the recovery histogram,
// observed once per recovery.
std::optional<double> CompletedRecovery(const std::optional<api::Goodput>& before,
                                        const std::optional<api::Goodput>& after);
// The same for two .status documents as JSON (a status that does not decode counts as having no goodput).
std::optional<double> CompletedRecovery(const nlohmann::json& status_before, const nlohmann::json& status_after);

// status.goodput brought forward to `now`: while the job steps in its accounted generation (Running) the time since
// asOf counts as productive, weighted by world / desired (`world_pods`, `desired_pods`: the membership's pods and
// status.replicas.desired); while it is neither finished nor suspended it counts as wall time.
struct LiveFigures {
  double productive_seconds = 0, wall_seconds = 0, ratio = 0;
};
LiveFigures LiveGoodput(const api::Goodput& goodput, int64_t membership_generation, int32_t world_pods,
                        int32_t desired_pods, const std::string& phase, std::chrono::system_clock::time_point now);

}  // namespace ringmaster::controller
