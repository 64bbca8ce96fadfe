#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/nccl/gpu_api.h"

namespace ringmaster::memory {
namespace {

// CUDA memory on one device, through the process's CUDA runtime (nccl/gpu_api.h). Every call sets the
// device on the calling thread for its duration: cudaMalloc allocates on the current device.
class CudaMemory : public Memory {
 public:
  explicit CudaMemory(int device) : device_(device), cuda_(nccl::Cuda()) {}
  StatusOr<void*> Allocate(size_t bytes) override {
    RINGMASTER_ASSIGN_OR_RETURN(const nccl::CudaApi* cuda, cuda_);
    nccl::DeviceGuard device(*cuda, device_);
    RINGMASTER_RETURN_IF_ERROR(device.status());
    void* p = nullptr;
    if (cudaError_t e = cuda->cudaMalloc(&p, bytes == 0 ? 1 : bytes); e != cudaSuccess) {
      return ResourceExhaustedError("cudaMalloc of " + std::to_string(bytes) + " bytes on device " +
                                    std::to_string(device_) + ": " + cuda->ErrorText(e));
    }
    return p;
  }
  void Free(void* ptr) override {
    if (cuda_.ok()) (*cuda_)->cudaFree(ptr);
  }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    return Copy(dst, src, bytes, cudaMemcpyHostToDevice, "H2D");
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    return Copy(dst, src, bytes, cudaMemcpyDeviceToHost, "D2H");
  }

 private:
  Status Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* what) {
    RINGMASTER_ASSIGN_OR_RETURN(const nccl::CudaApi* cuda, cuda_);
    nccl::DeviceGuard device(*cuda, device_);
    RINGMASTER_RETURN_IF_ERROR(device.status());
    if (cudaError_t e = cuda->cudaMemcpy(dst, src, bytes, kind); e != cudaSuccess) {
      return InternalError(std::string("cudaMemcpy ") + what + ": " + cuda->ErrorText(e));
    }
    // From pageable host memory cudaMemcpy returns once the bytes are staged, before the DMA lands; a
    // collective on a communicator's non-blocking stream is not ordered after it. Wait for it, so the upload
    // is done when Upload returns (an H200 showed the race: a 1-rank allreduce read half-uploaded input).
    if (kind == cudaMemcpyHostToDevice) {
      if (cudaError_t e = cuda->cudaStreamSynchronize(nullptr); e != cudaSuccess) {
        return InternalError(std::string("cudaStreamSynchronize after cudaMemcpy ") + what + ": " + cuda->ErrorText(e));
      }
    }
    return Status::Ok();
  }

  const int device_;
  const StatusOr<const nccl::CudaApi*> cuda_;
};

}  // namespace

std::unique_ptr<Memory> NewMemoryFor(comm::MemoryKind kind, int device) {
  if (kind == comm::MemoryKind::kCuda) return std::make_unique<CudaMemory>(device);
  return NewHostMemory();
}

}  // namespace ringmaster::memory
