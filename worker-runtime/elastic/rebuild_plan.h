// How a generation's world communicator is built (DESIGN.md, "Membership
// protocol", step 5): when the new membership only removes workers from the
// one this worker last built, and the backend can (NCCL >= 2.27), the survivors
// shrink the previous communicator -- no new unique id, no full init; otherwise
// everyone builds afresh. Each rank decides from the records alone, then the
// ranks agree through the generation's store, because a rank whose previous
// communicator differs (it rebuilt a later attempt, or joined later) must not
// shrink while the others do: the shrink happens only when every rank of the
// new world proposes the same shrink of the same parent.
//
// Thread-safety: pure functions, and AgreeOnShrink uses only its arguments.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/membership/membership_source.h"
#include "worker-runtime/store/store.h"

namespace ringmaster::elastic {

struct RebuildPlan {
  bool shrink = false;
  std::vector<int> excluded;  // ranks of `previous` that are gone, ascending (shrink only)
  std::string why;            // a line for the log: why this way
};

// `previous`: the record of the communicator this worker holds (nullptr when
// none); `can_shrink`: whether that communicator can be shrunk now.
RebuildPlan PlanRebuild(const api::Membership* previous, const api::Membership& next, bool can_shrink);

// The string every rank must propose identically for a shrink: the parent's
// build (`parent_incarnation`) and the excluded ranks; "fresh" otherwise.
std::string ShrinkProposal(const RebuildPlan& plan, int64_t parent_incarnation);

// Publishes this rank's proposal under `prefix` and reads everyone's: true when
// all `size` ranks proposed the same shrink. Errors: those of the store
// (DeadlineExceeded after `timeout`, Aborted when the generation is superseded).
StatusOr<bool> AgreeOnShrink(store::Store& store, const std::string& prefix, int rank, int size,
                             const std::string& proposal, std::chrono::milliseconds timeout);

}  // namespace ringmaster::elastic
