// Where a worker learns its job's membership: one record type (api::Membership, the operator's
// status.membership), several sources — the Kubernetes source (the pod watches its own TrainingJob's
// status.membership with its service-account token) and the file source (a JSON file rewritten
// atomically, for the local launcher and tests). DESIGN.md, "Membership protocol".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "api/hang_report.h"
#include "api/membership.h"
#include "api/progress_report.h"
#include "base/status.h"

namespace ringmaster::membership {

// A stream of membership records. Implementations are thread-safe: WaitNewer may block in one thread
// while Stop() is called from another.
class MembershipSource {
 public:
  virtual ~MembershipSource() = default;

  // Blocks until a record with generation > `after` is known and returns the newest one. Errors:
  // DeadlineExceeded after `timeout`; Cancelled once Stop() was called; Unavailable/PermissionDenied
  // only when the source cannot recover (transient failures are retried inside).
  virtual StatusOr<api::Membership> WaitNewer(int64_t after, std::chrono::milliseconds timeout) = 0;
  // The newest record seen so far (generation 0 when none). Never blocks.
  virtual api::Membership Latest() const = 0;
  // Wakes every waiter with Cancelled and stops watching. Idempotent.
  virtual void Stop() = 0;
  // Tells the membership's owner (the operator) that this worker cannot reach `pods`, members of
  // generation `generation` (api/peer_report.h). The owner decides; nothing changes here. A report
  // replaces this worker's previous one. Unimplemented where the source has no way back (the default:
  // the file and static sources); otherwise the error of the write, which the caller may retry.
  virtual Status ReportUnreachable(int64_t generation, const std::vector<std::string>& pods) {
    (void)generation, (void)pods;
    return UnimplementedError("this membership source takes no peer reports");
  }
  // Tells the membership's owner how generation `report.generation` started (api/progress_report.h): rank 0 of
  // each generation calls it once, when that generation's first step commits. A report replaces the previous one.
  // The default drops it and returns OK (the file and static sources have no one to tell); otherwise the error of
  // the write. A caller never stops training for it.
  virtual Status ReportProgress(const api::ProgressReport& report) {
    (void)report;
    return Status::Ok();
  }
  // Tells the membership's owner that generation `report.generation` is hung (api/hang_report.h): this worker's
  // hang watchdog saw no step progress and aborted its step. The owner decides; the operator and ringmaster-run
  // publish the next generation with reason Hung. A report replaces this worker's (report.reporter's) previous one.
  // Unimplemented where the source has no way back (the default: the static source); otherwise the error of the
  // write, which the caller may retry.
  virtual Status ReportHang(const api::HangReport& report) {
    (void)report;
    return UnimplementedError("this membership source takes no hang reports");
  }
};

}  // namespace ringmaster::membership
