// Negotiation: before running anything, the ranks of a process set agree on
// which queued requests run next. The common case costs one tiny allreduce
// on the control communicator per cycle (two when more than kAgreeAtOnce
// requests run): agree on how many run, and check they are the same requests
// in the same order. When they are not (ranks
// submitted in different orders: TensorFlow runs a graph's independent ops in
// any order), the ranks match requests by name, as Horovod's coordinator
// does (MatchByName: two allgathers), and run the ones every rank has, in
// rank 0's order. Requests with the same name but different tensors become an
// error on every rank instead of a deadlock or silently mixed data.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/fusion/request.h"

namespace ringmaster::fusion {

// What a cycle runs: the first `count` queued requests (the minimum over ranks of what each has queued), and
// whether they are the same on every rank in the same order (SameRequests).
struct Agreement {
  size_t count = 0;
  bool same = true;
  int64_t vote = 0;  // the smallest of the ranks' votes (Agree's `vote`)
};

// Up to this many requests, Agree settles both in one allreduce (a rebuild's restore, a synchronous step).
inline constexpr size_t kAgreeAtOnce = 8;

// The count and the sameness of a cycle. `queued`: this rank's queued requests, in order. One allreduce of
// 2 + 2 x kAgreeAtOnce int64s (the count, the fingerprints of the first kAgreeAtOnce requests and `vote`); a
// second one (SameRequests) only when more than kAgreeAtOnce requests run. `vote` rides along for free: the
// elastic driver's commit agreement (the newest step this rank confirmed; Agreement::vote is every rank's
// smallest). Errors: as Communicator (Aborted).
StatusOr<Agreement> Agree(comm::Communicator& control, const std::vector<Request*>& queued, int64_t vote = 0);

// OK when every rank holds the same requests (by Fingerprint) in the same
// order. Errors: FailedPrecondition naming the first position that differs,
// this rank's request there and the process set; Aborted from the communicator.
Status VerifySameRequests(comm::Communicator& control, const std::vector<Request*>& requests,
                          const std::string& set_name);

// Whether every rank holds the same requests (by Fingerprint) in the same order: the same answer on every
// rank. Errors: Aborted from the communicator.
StatusOr<bool> SameRequests(comm::Communicator& control, const std::vector<Request*>& requests);

// The requests every rank has queued, matched by name: indices into this rank's `queued`, in the order
// rank 0 queued them (so every rank runs them in the same order). A name queued twice on a rank matches its
// first occurrence; the rest wait for a later cycle. Empty when the ranks have no name in common yet.
// Errors: Aborted from the communicator.
StatusOr<std::vector<size_t>> MatchByName(comm::Communicator& control, const std::vector<Request*>& queued);

}  // namespace ringmaster::fusion
