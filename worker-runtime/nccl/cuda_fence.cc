#include "worker-runtime/nccl/cuda_fence.h"

namespace ringmaster::nccl {

StatusOr<std::shared_ptr<CudaEventFence>> CudaEventFence::Record(const CudaApi& cuda, int device, cudaStream_t stream) {
  DeviceGuard guard(cuda, device);
  if (!guard.status().ok()) return guard.status();
  cudaEvent_t event;
  // No timing: a timing event costs a timestamp and makes cudaStreamWaitEvent no cheaper.
  if (cudaError_t e = cuda.cudaEventCreateWithFlags(&event, cudaEventDisableTiming); e != cudaSuccess) {
    return UnavailableError("CUDA: cannot create an event to order a collective after its input's stream: " +
                            cuda.ErrorText(e));
  }
  if (cudaError_t e = cuda.cudaEventRecord(event, stream); e != cudaSuccess) {
    cuda.cudaEventDestroy(event);
    return UnavailableError("CUDA: cannot record an event on the input's stream: " + cuda.ErrorText(e));
  }
  return std::shared_ptr<CudaEventFence>(new CudaEventFence(cuda, event));
}

CudaEventFence::~CudaEventFence() { cuda_.cudaEventDestroy(event_); }

Status CudaEventFence::Wait() {
  if (cudaError_t e = cuda_.cudaEventSynchronize(event_); e != cudaSuccess)
    return UnavailableError("CUDA: waiting for the input's stream: " + cuda_.ErrorText(e));
  return Status::Ok();
}

Status CudaEventFence::OrderStream(void* stream) {
  if (cudaError_t e = cuda_.cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event_, 0); e != cudaSuccess)
    return UnavailableError("CUDA: ordering the collective's stream after the input's: " + cuda_.ErrorText(e));
  return Status::Ok();
}

}  // namespace ringmaster::nccl
