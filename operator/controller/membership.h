// The operator's side of the membership rule: which observed workers are eligible, why members leave, when
// joiners are admitted (DESIGN.md, "Membership protocol"). The record and the ordering rule are api/membership.h.
//
// The operator owns membership: only workers that are Running and Ready, on a healthy node, join.
// Survivors keep their relative rank order (rank 0 stays rank 0 unless it is lost), newcomers take the
// next ranks, and every change makes a strictly larger generation. Pure functions, no I/O, no errors;
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/membership.h"
#include "api/names.h"

namespace ringmaster::controller {

// Why membership changed. Also the Event reason and the membership condition's reason.
enum class ChangeReason {
  kJobStarted,       // the first generation: the gang minimum is Ready
  kWorkerJoined,     // workers became Ready and joined (batched)
  kScaledUp,         // joined because the desired count rose
  kWorkerFailed,     // a worker's pod failed
  kWorkerRemoved,    // a worker's pod was deleted or stopped being Ready
  kNodeLost,         // a worker's node went NotReady/Unknown for the detection window
  kPeerUnreachable,  // most of its peers reported that they cannot reach it (peer_verdict.h)
  kScaledDown,       // the desired count fell
  // A worker is about to be taken (preempted, evicted, deleted, or its node announced its loss by a taint):
  // it leaves alive, at a step boundary, like a scale-down; not a failure.
  kDisrupted,
  // A member reported the generation hung (api/hang_report.h: no step committed for a multiple of the median
  // step): the same members rebuild in a new generation. No worker is lost, but the stuck step is.
  kHung,
};
std::string ReasonName(ChangeReason reason);
// Whether the change lost a worker the job did not mean to let go (failed, removed, its node lost, cut
// off from its peers). A disruption is not a loss: the worker leaves alive; nor is a hang: every member stays.
bool IsLoss(ChangeReason reason);
// Whether the change is a failure, its Event a Warning: a loss, or a hang.
bool IsFailure(ChangeReason reason);

// What the reconciler observed about one worker pod.
struct WorkerObservation {
  std::string pod;
  std::string uid;
  int32_t index = 0;  // the stable worker index from the pod's name/label
  std::string address;
  std::string node;
  bool ready = false;        // phase Running and condition Ready=True, not being deleted
  bool failed = false;       // phase Failed
  bool node_lost = false;    // its node has been NotReady/Unknown past the detection window
  bool unreachable = false;  // a member its peers cannot reach (peer_verdict.h): removed, never rejoins
  // About to be taken while it still runs (a DisruptionTarget condition, a deletion under way, a disruption
  // taint on its node): not eligible, never rejoins; it commits and exits 0 like a scale-down's leaver.
  bool disrupted = false;
  bool beyond_desired = false;  // its index is not wanted any more (scale down)
  bool for_scale_up = false;    // created because the desired count rose (joins as ScaledUp)
  bool finishing = false;       // a member that exited 0 moments ago (the job is about to complete): it stays
  // A member whose hang report is about the current generation (api/hang_report.h): the seconds it saw no step
  // commit; 0 when it reported none.
  double hung_seconds = 0;
  // When it became Ready (for batching joins); ignored unless ready.
  std::chrono::system_clock::time_point ready_since{};
};

struct MembershipPolicy {
  int32_t min_workers = 1;  // in pods
  // Every world published (in ranks) is a multiple of this (spec.replicas.multipleOf: a device mesh's tp
  // group, say).
  int32_t multiple_of = 1;
  // Ranks per pod (spec.processesPerPod): a pod joins as that many consecutive ranks (processes 0..k-1)
  // and leaves with all of them.
  int32_t processes_per_pod = 1;
  std::chrono::seconds join_batch_window{10};
  int32_t coordinator_port = api::kCoordinatorPort;
  // The most pods the world holds (spec.replicas.desired); 0: no cap. Eligible workers beyond it wait outside
  // as warm spares (spec.replicas.spares) and fill the places of lost members at once.
  int32_t max_pods = 0;
};

// The outcome of one evaluation: a new record to publish, or why none is.
struct MembershipDecision {
  std::optional<api::Membership> next;  // set when a new generation must be published
  std::optional<ChangeReason> reason;   // set with next: why it changed (next->reason is its name)
  // When no new generation is due yet but joiners wait for their batch window: when to look again.
  std::optional<std::chrono::system_clock::time_point> recheck_at;
  std::string waiting_for;  // a sentence for the job's condition when the gang has not started
  // Members still eligible that leave only so that the world stays a multiple of multiple_of (a loss left
  // fewer than a whole group): like a scale-down, they commit and exit; the caller replaces them.
  std::vector<std::string> dropped;
  // Eligible workers kept out because the world is full (warm spares) or because they do not complete a group,
  // and a sentence that says what they wait for; 0 and empty otherwise.
  int32_t spares = 0;
  std::string spares_waiting;
};

// Derives the next membership from the current one and what is observed now. Workers are removed as
// soon as they are no longer eligible (failed, deleted, unready, node lost, beyond desired); joiners
// are added once the oldest of them has been Ready for the batch window (or at once, when every
// observed worker is Ready). The first generation needs `min_workers` Ready workers.
//
// Decisions are about pods: a pod's processes_per_pod ranks join, survive and leave together, and the
// worker counts below (min_workers, spares, dropped) count pods.
//
// The world holds at most `max_pods` pods: joiners beyond it wait as warm spares, and take the places of
// lost members in the generation that removes them (no batch window: a removal publishes at once).
// The world is the largest multiple of `multiple_of` that the survivors and the admitted joiners fill:
// joiners beyond it stay out as spares (they join when enough arrive to complete another group); when
// removals leave the survivors short of a multiple, the highest-ranked survivors are dropped down to the
// next lower multiple (the rest keep their order), first filled up from waiting joiners. Below one
// group the world is empty, and the job starts again under the gang rule.
//
// A member that reported the current generation hung (hung_seconds > 0) makes a new generation at once, even with
// nobody leaving or joining (reason Hung, unless a removal names the change): every member aborts its stuck step
// and rebuilds. Joiners waiting for their batch window join it (the world rebuilds anyway).
MembershipDecision DecideMembership(const api::Membership& current, const std::vector<WorkerObservation>& workers,
                                    const MembershipPolicy& policy, std::chrono::system_clock::time_point now);

}  // namespace ringmaster::controller
