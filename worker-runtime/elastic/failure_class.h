// Which failures a rebuild repairs and which end the worker: the one place that decides it (the elastic
// driver's Join and Run, the worker programs' exit, the Python module's exceptions all ask here).
//
//   Membership failures -- a peer died, hung or left, the membership moved on -- a rebuild in place repairs:
//     Aborted, DeadlineExceeded, Unavailable, Cancelled (from collectives, the rendezvous, the store).
//   Everything else ends the worker at once; no retry can mend it, and retrying only hides it:
//     DataLoss            a sticky CUDA error (illegal address, ECC, launch failure: the GPU's context is lost
//                         until the process exits) or NCCL's ncclUnhandledCudaError (nccl_communicator.h),
//                         state that cannot be decoded
//     FailedPrecondition  a refused configuration (NCCL's ncclInvalidUsage at init: two ranks on one GPU), a GPU
//                         library that cannot be used (emulation not built, symbols missing)
//     InvalidArgument     a bad option or a device index beyond the visible GPUs; NCCL's ncclInvalidArgument
//     NotFound            a GPU library that cannot be loaded (gpu_libraries.h)
//     Internal, Unauthenticated, and any other code.
// The worker then exits non-zero with a termination message naming its node, its GPU and the error
// (termination_report.h), and whoever runs it (the operator, ringmaster-run) replaces or stops it.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "base/status.h"

namespace ringmaster::elastic {

enum class FailureClass {
  kMembership,  // a rebuild at the next (or the same) generation repairs it
  kEndsWorker,  // this process cannot go on: exit with a termination message
};

FailureClass ClassifyFailure(StatusCode code);
inline FailureClass ClassifyFailure(const Status& status) { return ClassifyFailure(status.code()); }

// Whether a rebuild repairs a failure with this code (ClassifyFailure == kMembership). False for OK.
inline bool RebuildRepairs(StatusCode code) { return ClassifyFailure(code) == FailureClass::kMembership; }
inline bool RebuildRepairs(const Status& status) { return RebuildRepairs(status.code()); }

// "a membership failure (a rebuild repairs it)" or "a failure no rebuild repairs"; for log lines.
std::string_view Describe(FailureClass c);

}  // namespace ringmaster::elastic
