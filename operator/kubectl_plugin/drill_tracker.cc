#include "operator/kubectl_plugin/drill_tracker.h"

#include <cctype>

#include "base/time_format.h"
#include "operator/kubectl_plugin/durations.h"
#include "operator/kubectl_plugin/timeline.h"

namespace ringmaster::kubectl_plugin {

namespace {

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == ':'; }

}  // namespace

bool MessageNamesLeaver(const std::string& message, const std::string& pod) {
  const size_t joined = message.find("joined: ");
  for (size_t at = message.find(pod); at != std::string::npos; at = message.find(pod, at + 1)) {
    if (joined != std::string::npos && at > joined) return false;
    const bool starts = at == 0 || !NameChar(message[at - 1]);
    const size_t end = at + pod.size();
    // "pod:1" is process 1 of the pod: the pod itself.
    const bool ends = end == message.size() || !NameChar(message[end]) || message[end] == ':';
    if (starts && ends) return true;
  }
  return false;
}

DrillTracker::DrillTracker(Victim victim, Clock::time_point t0) : victim_(std::move(victim)), t0_(t0) {}

void DrillTracker::Detect(Detection d) {
  if (detection_ && detection_->generation < d.generation) return;
  if (detection_ && detection_->generation == d.generation) {
    if (!detection_->published) detection_->published = d.published;
    if (!detection_->seen) detection_->seen = d.seen;
    return;
  }
  detection_ = std::move(d);
}

void DrillTracker::SeeMembership(const api::Membership& m, Clock::time_point seen) {
  latest_generation_ = std::max(latest_generation_, m.generation);
  if (m.generation <= victim_.generation) return;
  for (const auto& member : m.members) {
    if (member.pod == victim_.pod && member.uid == victim_.uid) return;  // still a member
  }
  Detect({m.generation, m.world_size(), m.reason, ParseRfc3339(m.changed_at), seen});
}

void DrillTracker::SeeEvents(const std::vector<EventRecord>& job_events) {
  for (const auto& e : job_events) {
    auto headline = ParseGenerationMessage(e.message);
    if (!headline || headline->generation <= victim_.generation) continue;
    if (!MessageNamesLeaver(e.message, victim_.pod)) continue;
    Detect({headline->generation, headline->world_size, e.reason, e.first, std::nullopt});
  }
}

void DrillTracker::SeeProgress(const api::ProgressReport& p) {
  last_progress_ = p;
  auto at = ParseRfc3339(p.first_step_at);  // DecodeProgressReport checked it
  if (!at || p.generation <= victim_.generation || *at <= t0_) return;
  if (recovery_ && recovery_->generation <= p.generation) return;
  recovery_ = p;
  recovered_at_ = *at;
}

void DrillTracker::NoteNoProgress(std::string why) { no_progress_ = std::move(why); }

std::optional<double> DrillTracker::detection_seconds() const {
  if (!detection_ || !detection_->published) return std::nullopt;
  // changedAt has whole seconds: a publication within the kill's second reads as 0.
  return std::max(0.0, SecondsBetween(t0_, *detection_->published));
}

std::optional<double> DrillTracker::detection_seen_seconds() const {
  if (!detection_ || !detection_->seen) return std::nullopt;
  return SecondsBetween(t0_, *detection_->seen);
}

std::optional<double> DrillTracker::recovery_seconds() const {
  if (!recovery_) return std::nullopt;
  return SecondsBetween(t0_, recovered_at_);
}

std::string DrillTracker::WaitingFor(const std::string& progress_source) const {
  const std::string after = "generation " + std::to_string(victim_.generation);
  if (!detection_) {
    return "the operator to publish a generation after " + after + " without pod " + victim_.pod + " (uid " +
           victim_.uid + "); the newest generation seen is " + std::to_string(latest_generation_);
  }
  std::string last;
  if (last_progress_) {
    last = "the last record is generation " + std::to_string(last_progress_->generation) + "'s, first step at " +
           last_progress_->first_step_at;
  } else {
    last = no_progress_.empty() ? "no record read yet" : no_progress_;
  }
  return "the first step of a generation after " + after + " (detected at generation " +
         std::to_string(detection_->generation) + ") committed after the kill, from the progress record in " +
         progress_source + ": " + last;
}

std::string FormatDrillResult(const DrillTracker& tracker, const std::optional<api::Goodput>& goodput) {
  const Victim& v = tracker.victim();
  std::string out = "killed:     rank " + std::to_string(v.rank) + ", pod " + v.pod + " (uid " + v.uid +
                    ") of generation " + std::to_string(v.generation) + " (world size " + std::to_string(v.world_size) +
                    ") at " + FormatRfc3339(tracker.t0(), TimePrecision::kMillis) + "\n";
  if (const auto& d = tracker.detection()) {
    auto s = tracker.detection_seconds();
    out += "detection:  " + (s ? FormatSeconds(*s) : std::string("?")) + "  generation " +
           std::to_string(d->generation) + " (" + (d->reason.empty() ? "no reason" : d->reason) + ", world size " +
           std::to_string(d->world_size) + ") published " +
           (d->published ? FormatRfc3339(*d->published) : std::string("at an unknown time"));
    if (auto seen = tracker.detection_seen_seconds()) out += " (seen by the drill after " + FormatSeconds(*seen) + ")";
    out += "\n";
  } else {
    out += "detection:  not seen (no generation without the pod was seen in the status or the job's Events)\n";
  }
  if (const auto& r = tracker.recovery()) {
    out += "recovery:   " + FormatSeconds(*tracker.recovery_seconds()) + "  generation " +
           std::to_string(r->generation) + " committed step " + std::to_string(r->first_step) + " at " +
           r->first_step_at + " at world size " + std::to_string(r->world_size) + ", restored from " +
           r->restored_from + ", " + std::to_string(r->replayed_steps) + " steps replayed";
    out += "\n";
  }
  out += "job history: " + GoodputHistory(goodput) + "\n";
  return out;
}

}  // namespace ringmaster::kubectl_plugin
