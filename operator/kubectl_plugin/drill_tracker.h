// The fire drill's bookkeeping, apart from any I/O: after a member's pod was killed at t0, which generation
// detected it and which recovered, from what the drill sees of the job (its status.membership, polled, and its
// Events, for generations published between two polls) and the workers' progress record (progress.h).
//
//   detection: the first generation after the one in force at the kill that no longer holds the killed pod
//              with its uid (it left, or a replacement of the same name took its place); its time is its
//              changedAt (the Event's time when only the Event was seen).
//   recovery:  the progress record of a generation after the one in force at the kill whose first step
//              committed after t0.
//
// Errors: none. Thread-safety: not thread-safe (one drill, one thread); values otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/membership.h"
#include "operator/kubectl_plugin/event_list.h"
#include "operator/kubectl_plugin/progress.h"

namespace ringmaster::kubectl_plugin {

// The member the drill killed.
struct Victim {
  int64_t generation = 0;  // the generation in force when it was killed
  int32_t world_size = 0;
  int32_t rank = 0;
  std::string pod, uid;
};

struct Detection {
  int64_t generation = 0;
  int32_t world_size = 0;
  std::string reason;
  std::optional<Clock::time_point> published;  // changedAt: whole seconds
  std::optional<Clock::time_point> seen;       // when the drill first read it in the status (an upper bound)
};

class DrillTracker {
 public:
  DrillTracker(Victim victim, Clock::time_point t0);

  // The job's status.membership as polled at `seen`.
  void SeeMembership(const api::Membership& m, Clock::time_point seen);
  // The job's Events (any: those that are not a generation's, or do not name the victim as leaving, are skipped).
  void SeeEvents(const std::vector<EventRecord>& job_events);
  // The progress record as read now.
  void SeeProgress(const api::ProgressReport& p);
  // Why no progress record could be read (no ConfigMap, no key, a record that does not decode), for the
  // timeout's message.
  void NoteNoProgress(std::string why);

  const Victim& victim() const { return victim_; }
  Clock::time_point t0() const { return t0_; }
  const std::optional<Detection>& detection() const { return detection_; }
  const std::optional<api::ProgressReport>& recovery() const { return recovery_; }
  // The newest generation seen in the status.
  int64_t latest_generation() const { return latest_generation_; }

  // Seconds from t0 to the detecting generation's publication (changedAt has whole seconds: a publication
  // within the kill's second reads as 0), and to when the drill first saw it; to the recovering generation's
  // first step.
  std::optional<double> detection_seconds() const;
  std::optional<double> detection_seen_seconds() const;
  std::optional<double> recovery_seconds() const;

  // What the drill still waits for, as a sentence ("the operator to publish a generation without pod ..."),
  // for the timeout's message.
  std::string WaitingFor(const std::string& progress_source) const;

 private:
  void Detect(Detection d);

  const Victim victim_;
  const Clock::time_point t0_;
  std::optional<Detection> detection_;
  std::optional<api::ProgressReport> recovery_, last_progress_;
  Clock::time_point recovered_at_;  // recovery_'s first step
  std::string no_progress_;
  int64_t latest_generation_ = 0;
};

// Whether `message` (a generation's Event) names `pod` among the workers that left, before any "joined:".
bool MessageNamesLeaver(const std::string& message, const std::string& pod);

// The drill's closing lines: the killed rank and pod, detection and recovery with their seconds and
// generations, and the job's own history for comparison (status.goodput).
std::string FormatDrillResult(const DrillTracker& tracker, const std::optional<api::Goodput>& goodput);

}  // namespace ringmaster::kubectl_plugin
