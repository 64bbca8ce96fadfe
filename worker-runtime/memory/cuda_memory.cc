#include <cuda_runtime_api.h>

#include "memory/buffer_memory.h"

namespace ringmaster::runtime {
namespace {

class CudaMemory : public Memory {
 public:
  explicit CudaMemory(int device) : device_(device) {}
  StatusOr<void*> Allocate(size_t bytes) override {
    cudaSetDevice(device_);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
      return ResourceExhaustedError("cudaMalloc of " + std::to_string(bytes) + " bytes failed");
    }
    return p;
  }
  void Free(void* ptr) override { cudaFree(ptr); }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess) return InternalError("cudaMemcpy H2D");
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return InternalError("cudaMemcpy D2H");
    return Status::Ok();
  }

 private:
  const int device_;
};

}  // namespace

std::unique_ptr<Memory> NewMemoryFor(MemoryKind kind, int device) {
  if (kind == MemoryKind::kCuda) return std::make_unique<CudaMemory>(device);
  return NewHostMemory();
}

}  // namespace ringmaster::runtime
