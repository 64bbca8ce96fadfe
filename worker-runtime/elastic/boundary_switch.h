// BoundarySwitch: a membership change in which no member dies -- workers joining, a scale-down, a worker
// leaving alive because it is about to be preempted, evicted or lose its node (the operator's Disrupted), or
// the whole job suspended (its user's spec.runPolicy.suspend, or the queue evicting or preempting it: the
// operator's empty generation of reason Suspended, which every member leaves alive) -- need not abort the
// step in flight. Every member finishes its steps up to one agreed step boundary and switches there, so no
// step is computed twice and a disrupted worker leaves with its work committed. When the new generation
// keeps none of the running build's members (a suspension), rank 0 of the running build saves the state
// committed at the boundary as a checkpoint before it leaves (ElasticDriver, "Checkpoints"), and the
// resumed job starts from exactly that step.
//
// The boundary: rank 0 of the running generation chooses it when it sees the change, two steps past the
// step it last started (no member can have committed more than one step past what rank 0 started: every
// step's collectives wait for rank 0), and publishes it in its rendezvous store under the running build's
// store generation; the other members read it at their step boundaries. A member that somehow ran past it
// (its watch saw the change a whole step late) is aborted and rolls back to the boundary, as on a failure.
//
// Thread-safety: every method may be called from any thread (the driver's watcher and training thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "api/membership.h"
#include "base/status.h"
#include "worker-runtime/store/store_client.h"

namespace ringmaster::elastic {

// Whether `next`'s reason is one in which every member of the generation before it stays or leaves alive
// (WorkerJoined, ScaledUp, ScaledDown, Disrupted, Suspended: api::reason::kSuspended).
bool OrderlyReason(const api::Membership& next);
// Whether `next` may wait for a step boundary of `running`: it follows it directly and OrderlyReason. Any other
// change (a failure, a lost node, a skipped record) aborts the running step at once.
bool OrderlyChange(const api::Membership& running, const api::Membership& next);

// Where the running build's boundary is published: rank 0's store at that build's store generation.
struct SwitchStore {
  std::string host;
  uint16_t port = 0;
  std::string secret;
  uint64_t store_generation = 0;
  int rank = 0;  // this member's rank in the running build
};

class BoundarySwitch {
 public:
  // A new build runs: its store, and no switch pending.
  void Running(SwitchStore store);
  // `generation` is an orderly change of the running build. Rank 0 publishes the boundary (`started_step` + 2);
  // the others learn it at Step(). Once per build. Errors: FailedPrecondition (a switch of this build was
  // begun already, and given up), or rank 0's publication failed; the caller aborts instead.
  Status Begin(int64_t generation, int64_t started_step);
  // A further orderly change came before the boundary: switch there to `generation` instead.
  void Retarget(int64_t generation) { pending_.store(generation); }
  // The switch is over: done (a rebuild began), or given up for an abort.
  void Clear();

  bool pending() const { return pending_.load() != 0; }
  int64_t pending_generation() const { return pending_.load(); }
  // The step after whose commit every member switches; 0 while unknown (rank 0 has not chosen it yet, or
  // its store cannot be reached). Asks rank 0's store while unknown.
  int64_t Step();
  // How long the switch has been pending.
  std::chrono::steady_clock::duration Age() const;

 private:
  StatusOr<int64_t> Exchange(int64_t delta);  // Add(key, delta) on rank 0's store, connecting once

  std::atomic<int64_t> pending_{0};  // the generation switched to; 0: none
  std::atomic<bool> begun_{false};   // Begin was called in this build (its boundary key is taken)
  std::atomic<int64_t> step_{0};     // the boundary, once known
  std::atomic<std::chrono::steady_clock::rep> since_{0};

  std::mutex mu_;
  // Guarded by mu_.
  SwitchStore store_;
  std::unique_ptr<store::StoreClient> client_;
};

}  // namespace ringmaster::elastic
