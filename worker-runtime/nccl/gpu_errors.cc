#include "worker-runtime/nccl/gpu_errors.h"

namespace ringmaster::nccl {

bool IsStickyCudaError(cudaError_t e) {
  switch (e) {
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorExternalDevice: return true;
    default: return false;
  }
}

StatusCode CudaFailureCode(cudaError_t e, StatusCode otherwise) {
  if (IsStickyCudaError(e)) return StatusCode::kDataLoss;
  switch (e) {
    case cudaErrorInvalidDevice: return StatusCode::kInvalidArgument;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError:
    case cudaErrorSystemNotReady: return StatusCode::kFailedPrecondition;
    default: return otherwise;
  }
}

StatusCode NcclFailureCode(ncclResult_t r, bool at_init) {
  if (r == ncclUnhandledCudaError) return StatusCode::kDataLoss;
  if (at_init && r == ncclInvalidUsage) return StatusCode::kFailedPrecondition;
  if (at_init && r == ncclInvalidArgument) return StatusCode::kInvalidArgument;
  return StatusCode::kAborted;
}

std::string StickyNote(cudaError_t e, int device) {
  if (!IsStickyCudaError(e)) return "";
  return " (a sticky CUDA error on GPU " + std::to_string(device) + ": this process cannot use it again)";
}

}  // namespace ringmaster::nccl
