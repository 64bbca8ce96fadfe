// Where a worker learns its job's membership: one record type, several sources — the Kubernetes
// source (the pod watches its own TrainingJob's status.membership with its service-account token)
// and the file source (a JSON file rewritten atomically, for the local launcher and tests). The record
// has the same shape as the operator's status.membership (DESIGN.md, "Membership protocol").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::membership {

struct MemberRecord {
  std::string pod;      // the worker's stable id (pod name, or the launcher's worker name)
  std::string uid;      // changes when a worker of the same name is replaced
  int32_t rank = 0;
  std::string address;  // where the worker listens (pod IP)
  std::string node;

  bool operator==(const MemberRecord&) const = default;
};

struct MembershipRecord {
  int64_t generation = 0;  // 0: nothing published yet; every change is strictly larger
  std::string coordinator;  // host:port of the rendezvous store, served by rank 0
  std::vector<MemberRecord> members;  // sorted by rank, ranks 0..size-1
  std::string reason;

  int32_t world_size() const { return static_cast<int32_t>(members.size()); }
  // The member with this id (pod), or nullptr.
  const MemberRecord* Find(const std::string& pod) const;
  bool operator==(const MembershipRecord&) const = default;
};

// Parses a status.membership object (or the file source's document, which has the same shape).
// InvalidArgument naming the field when it is malformed: ranks not 0..n-1, missing pod names, a
// worldSize that disagrees with the member list, a negative generation.
StatusOr<MembershipRecord> ParseMembershipRecord(const nlohmann::json& j);
nlohmann::json MembershipRecordToJson(const MembershipRecord& record);

// A stream of membership records. Implementations are thread-safe: WaitNewer may block in one thread
// while Stop() is called from another.
class MembershipSource {
 public:
  virtual ~MembershipSource() = default;

  // Blocks until a record with generation > `after` is known and returns the newest one. Errors:
  // DeadlineExceeded after `timeout`; Cancelled once Stop() was called; Unavailable/PermissionDenied
  // only when the source cannot recover (transient failures are retried inside).
  virtual StatusOr<MembershipRecord> WaitNewer(int64_t after, std::chrono::milliseconds timeout) = 0;
  // The newest record seen so far (generation 0 when none). Never blocks.
  virtual MembershipRecord Latest() const = 0;
  // Wakes every waiter with Cancelled and stops watching. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace ringmaster::membership
