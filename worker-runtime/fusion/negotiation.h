// Negotiation: before running anything, the ranks of a process set agree on
// how many queued requests run next and check that they are the same
// requests in the same order. A mismatch (ranks submitted in different
// orders, or different tensors) becomes an error on every rank instead of a
// deadlock or silently mixed data. Two tiny allreduces on the control
// communicator per cycle.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/fusion/request.h"

namespace ringmaster::fusion {

// The minimum over ranks of local_pending. Errors: as Communicator (Aborted).
StatusOr<size_t> AgreeOnCount(comm::Communicator& control, size_t local_pending);

// OK when every rank holds the same requests (by Fingerprint) in the same
// order. Errors: FailedPrecondition naming the first position that differs,
// this rank's request there and the process set; Aborted from the communicator.
Status VerifySameRequests(comm::Communicator& control, const std::vector<Request*>& requests,
                          const std::string& set_name);

}  // namespace ringmaster::fusion
