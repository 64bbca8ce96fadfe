// CudaEventFence: a comm::ReadyFence at the current end of a CUDA stream -- an event recorded on the stream the
// framework queued a collective's input on (torch's current stream). The NCCL communicator makes its own stream
// wait for it on the device (cudaStreamWaitEvent), as torch's ProcessGroupNCCL orders its stream after the
// caller's: the caller's thread goes on queueing kernels (DDP's backward) instead of waiting for them.
// Thread-safety: safe from any thread (CUDA's calls are). Ownership: owns its event; destroying it while a
// stream still waits on it is allowed (CUDA releases the event once that work is done).
#pragma once

#include <memory>

#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/nccl/gpu_api.h"

namespace ringmaster::nccl {

class CudaEventFence : public comm::ReadyFence {
 public:
  // Records a fence at the current end of `stream` (a cudaStream_t of `device`; 0 is the legacy default
  // stream). The calling thread's current device is restored. Errors: Unavailable, with the CUDA runtime's words.
  static StatusOr<std::shared_ptr<CudaEventFence>> Record(const CudaApi& cuda, int device, cudaStream_t stream);
  ~CudaEventFence() override;
  CudaEventFence(const CudaEventFence&) = delete;
  CudaEventFence& operator=(const CudaEventFence&) = delete;

  // cudaEventSynchronize. Errors: Unavailable.
  Status Wait() override;
  // cudaStreamWaitEvent(stream, event). Errors: Unavailable.
  Status OrderStream(void* stream) override;

 private:
  CudaEventFence(const CudaApi& cuda, cudaEvent_t event) : cuda_(cuda), event_(event) {}
  const CudaApi& cuda_;
  const cudaEvent_t event_;
};

}  // namespace ringmaster::nccl
