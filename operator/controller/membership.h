// The membership record and the rule that derives the next one (DESIGN.md, "Membership protocol").
//
// The operator owns membership: only workers that are Running and Ready, on a healthy node, join.
// Survivors keep their relative rank order (rank 0 stays rank 0 unless it is lost), newcomers take the
// next ranks, and every change makes a strictly larger generation. Pure functions, no I/O; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::controller {

struct Member {
  std::string pod;
  std::string uid;
  int32_t rank = 0;
  std::string address;  // the pod IP
  std::string node;

  bool operator==(const Member&) const = default;
};

// Why membership changed. Also the Event reason and the membership condition's reason.
enum class ChangeReason {
  kJobStarted,     // the first generation: the gang minimum is Ready
  kWorkerJoined,   // workers became Ready and joined (batched)
  kScaledUp,       // joined because the desired count rose
  kWorkerFailed,   // a worker's pod failed
  kWorkerRemoved,  // a worker's pod was deleted or stopped being Ready
  kNodeLost,       // a worker's node went NotReady/Unknown for the detection window
  kScaledDown,     // the desired count fell
};
std::string ReasonName(ChangeReason reason);

struct Membership {
  int64_t generation = 0;  // 0: no membership published yet
  std::string coordinator;  // host:port of the rendezvous store, served by rank 0
  std::vector<Member> members;  // sorted by rank; ranks are 0..size-1
  std::string reason;
  std::string message;
  std::string changed_at;  // RFC 3339

  int32_t world_size() const { return static_cast<int32_t>(members.size()); }
  const Member* Find(const std::string& pod) const;
};

// status.membership <-> Membership. FromJson: InvalidArgument naming the bad field.
nlohmann::json MembershipToJson(const Membership& m);
StatusOr<Membership> MembershipFromJson(const nlohmann::json& j);

// What the reconciler observed about one worker pod.
struct WorkerObservation {
  std::string pod;
  std::string uid;
  int32_t index = 0;  // the stable worker index from the pod's name/label
  std::string address;
  std::string node;
  bool ready = false;          // phase Running and condition Ready=True, not being deleted
  bool failed = false;         // phase Failed
  bool node_lost = false;      // its node has been NotReady/Unknown past the detection window
  bool beyond_desired = false; // its index is not wanted any more (scale down)
  bool for_scale_up = false;   // created because the desired count rose (joins as ScaledUp)
  bool finishing = false;      // a member that exited 0 moments ago (the job is about to complete): it stays
  // When it became Ready (for batching joins); ignored unless ready.
  std::chrono::system_clock::time_point ready_since{};
};

struct MembershipPolicy {
  int32_t min_workers = 1;
  std::chrono::seconds join_batch_window{10};
  int32_t coordinator_port = 29500;
};

// The outcome of one evaluation: a new record to publish, or why none is.
struct MembershipDecision {
  std::optional<Membership> next;  // set when a new generation must be published
  // When no new generation is due yet but joiners wait for their batch window: when to look again.
  std::optional<std::chrono::system_clock::time_point> recheck_at;
  std::string waiting_for;  // a sentence for the job's condition when the gang has not started
};

// Derives the next membership from the current one and what is observed now. Workers are removed as
// soon as they are no longer eligible (failed, deleted, unready, node lost, beyond desired); joiners
// are added once the oldest of them has been Ready for the batch window (or at once, when every
// observed worker is Ready). The first generation needs `min_workers` Ready workers.
MembershipDecision DecideMembership(const Membership& current, const std::vector<WorkerObservation>& workers,
                                    const MembershipPolicy& policy, std::chrono::system_clock::time_point now);

}  // namespace ringmaster::controller
