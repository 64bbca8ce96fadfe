// Hang reports: how a worker tells the membership's owner that its generation is hung. Its hang
// watchdog (worker-runtime/elastic/hang_watchdog.h) saw no step commit for a multiple of the recent median step:
// a collective that neither fails nor completes (a dead NVLink peer gives no asynchronous error). The worker has
// already aborted its own step; the owner decides for every member: the operator (and ringmaster-run) publishes
// the next generation with reason api::reason::kHung, the same members, so that every member -- also one stuck
// where its own watchdog cannot see it -- aborts and rebuilds, and counts it (status.hangs, an Event, goodput).
//
// Where it goes. Under the operator, the job's peer-reports ConfigMap (api/peer_report.h) under the key
// HangReportKey(pod), "_hung.<pod>": an underscore cannot appear in a pod name, so it never collides with a
// peer report, and "_hung." never with "_progress". A newer report from the same pod replaces its older one (a
// JSON merge patch of one key). Under ringmaster-run, a file HangReportFileName(worker) in the directory of the
// membership file. A report counts only while its generation is the current one: the generation it causes makes
// it stale, so the same report seen twice counts once.
//
// The value is JSON (names fixed):
//   {"generation":G,"stalledSeconds":x,"medianStepSeconds":y,"step":S,"reportedAt":"<RFC 3339, ms, UTC>"}
//   G  the generation that is hung; x  seconds without a committed step when it was reported; y  the median step
//   time the verdict was judged by; S  the steps committed then. The stall began x seconds before reportedAt.
//
// Errors: DecodeHangReport returns InvalidArgument naming the reporter and the field. Never throws.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::api {

struct HangReport {
  std::string reporter;  // the reporting worker's pod (or ringmaster-run's worker name)
  int64_t generation = 0;
  double stalled_seconds = 0;
  double median_step_seconds = 0;
  int64_t step = 0;         // committed steps when reported
  std::string reported_at;  // RFC 3339, milliseconds, UTC

  bool operator==(const HangReport&) const = default;
};

// The peer-reports ConfigMap key of `pod`'s hang report, and the pod whose report a key holds (nullopt for a
// key that is no hang report).
std::string HangReportKey(std::string_view pod);
std::optional<std::string> HangReporterOfKey(std::string_view key);
// The file of `worker`'s hang report under ringmaster-run, in the membership file's directory: "hang.<worker>.json";
// and the worker whose report a file name holds (nullopt for another file).
std::string HangReportFileName(std::string_view worker);
std::optional<std::string> HangReporterOfFileName(std::string_view file);

// The value (the reporter is the key's, not in the value).
std::string EncodeHangReport(const HangReport& report);
// `reporter`'s report from its value. InvalidArgument "hang report of <reporter>: <field>: ..." for a value that
// is not a JSON object, a generation below 1, a missing or negative number, or a reportedAt that is not RFC 3339.
StatusOr<HangReport> DecodeHangReport(const std::string& reporter, std::string_view value);

}  // namespace ringmaster::api
