#include "memory/buffer_memory.h"

#include <cstdlib>
#include <cstring>

namespace ringmaster::runtime {
namespace {

class HostMemory : public Memory {
 public:
  StatusOr<void*> Allocate(size_t bytes) override {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) return ResourceExhaustedError("cannot allocate " + std::to_string(bytes) + " bytes");
    return p;
  }
  void Free(void* ptr) override { std::free(ptr); }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Memory> NewHostMemory() { return std::make_unique<HostMemory>(); }

}  // namespace ringmaster::runtime
