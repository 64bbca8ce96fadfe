// Progress reports: how a job's workers tell the operator what each membership generation cost and when it
// started to train (for goodput). Rank 0 of a generation writes one report, once, when that generation's
// first step commits. It lives in the job's peer-reports ConfigMap (api/peer_report.h, PeerReportsName(job)) under
// the key kProgressReportKey, "_progress": an underscore cannot appear in a pod name, so the key never collides
// with a worker's peer report. A newer generation's report replaces the older one (a JSON merge patch of that one
// key, which the worker's per-job Role allows); the operator folds each into status.goodput
// (operator/controller/goodput.h) as it sees it.
//
// The value is JSON (names fixed: a kubectl plugin reads them too):
//   {"generation":G,"reporter":"<rank 0's pod>","worldSize":N,"firstStep":S,
//    "firstStepAt":"<RFC 3339 with milliseconds, UTC>","resumedFrom":R,
//    "restoredFrom":"peer"|"checkpoint"|"initial","replayedSteps":K,
//    "rebuildSeconds":x,"restoreSeconds":y,"stepSeconds":z}
//   S  the step number that committed first in generation G (steps count from 1);
//   R  the step the state was restored or kept at when G started (S = R + 1);
//   restoredFrom  where that state came from: "peer" a member kept it in memory through the change (the
//      survivors'), "checkpoint" loaded from the newest checkpoint (every holder of newer state was lost), "initial"
//      the program's initial state (no checkpoint);
//   K  the committed steps the world had reached beyond R before the change: work done again. 0 when survivors
//      kept their state. The workers can count only steps that a member of the new world saw committed, so when
//      every member was lost (restoredFrom checkpoint or initial after a failure) K is 0 as well;
//   x  seconds from the worker seeing generation G to its communicators being ready;
//   y  seconds restoring the state (the agreement on the newest step and its broadcast);
//   z  the mean step time of the previous generation, or of this generation's first step when rank 0 has none
//      (a new world); 0 when unknown.
//
// Errors: DecodeProgressReport returns InvalidArgument naming the field. Never throws.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::api {

// The key of the progress report in the peer-reports ConfigMap.
inline constexpr std::string_view kProgressReportKey = "_progress";

// ProgressReport::restored_from's values.
namespace restored_from {
inline constexpr std::string_view kPeer = "peer";
inline constexpr std::string_view kCheckpoint = "checkpoint";
inline constexpr std::string_view kInitial = "initial";
}  // namespace restored_from

struct ProgressReport {
  int64_t generation = 0;
  std::string reporter;        // rank 0's pod
  int32_t world_size = 0;      // ranks
  int64_t first_step = 0;      // S
  std::string first_step_at;   // RFC 3339, milliseconds, UTC
  int64_t resumed_from = 0;    // R
  std::string restored_from;   // restored_from::k*
  int64_t replayed_steps = 0;  // K
  double rebuild_seconds = 0, restore_seconds = 0, step_seconds = 0;

  bool operator==(const ProgressReport&) const = default;
};

// The ConfigMap value.
std::string EncodeProgressReport(const ProgressReport& report);
// A report from its ConfigMap value. InvalidArgument "progress report: <field>: ..." for a value that is not a
// JSON object, a missing field or one of the wrong type, generation or worldSize below 1, negative steps or
// seconds, an unknown restoredFrom, or a firstStepAt that is not RFC 3339 in UTC.
StatusOr<ProgressReport> DecodeProgressReport(std::string_view value);

}  // namespace ringmaster::api
