// How a failed CUDA or NCCL call becomes a Status code: the one mapping of the NCCL communicator
// (nccl_communicator.h) and the device guard (gpu_api.h), so that a failure no rebuild repairs never reads as a
// lost peer (worker-runtime/elastic/failure_class.h decides from the code what rebuilds and what ends the worker):
//
//   a sticky CUDA error (IsStickyCudaError: illegal address, ECC, launch failure, ...)     DataLoss
//       the GPU's context is lost: every later call in this process fails the same way
//   cudaErrorInvalidDevice                                                                 InvalidArgument
//   no usable device or driver (cudaErrorNoDevice, InsufficientDriver, SystemDriverMismatch, DevicesUnavailable,
//       InitializationError, SystemNotReady)                                               FailedPrecondition
//   any other CUDA error                                                                   the call site's own
//   ncclUnhandledCudaError (NCCL's own CUDA call failed: sticky, or out of memory)         DataLoss
//   at init only: ncclInvalidUsage (a refused configuration: two ranks on one GPU)         FailedPrecondition
//                 ncclInvalidArgument                                                      InvalidArgument
//   any other NCCL error, a timeout, an abort (ncclSystemError, ncclRemoteError: a peer)   Aborted
// (After init, ncclInvalidUsage/ncclInvalidArgument are what a revoked or aborted communicator answers: Aborted.)
//
// Thread-safety: pure functions.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "base/status.h"

namespace ringmaster::nccl {

// Whether `e` is one of the CUDA errors that leave the process's CUDA context unusable until it exits (the CUDA
// runtime API's "sticky" errors).
bool IsStickyCudaError(cudaError_t e);

// The code of a failed CUDA call (see the top of this file); `otherwise` for an error the table does not name.
StatusCode CudaFailureCode(cudaError_t e, StatusCode otherwise);

// The code of a failed NCCL call; `at_init`: ncclCommInitRankConfig or its poll.
StatusCode NcclFailureCode(ncclResult_t r, bool at_init);

// What a message says of a sticky CUDA error on `device`: " (a sticky CUDA error on GPU <device>: this process
// cannot use it again)"; empty for any other error.
std::string StickyNote(cudaError_t e, int device);

}  // namespace ringmaster::nccl
