#include <cstdlib>
#include <cstring>

#include "worker-runtime/memory/buffer_memory.h"

namespace ringmaster::memory {
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
    Copy(dst, src, bytes);
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    Copy(dst, src, bytes);
    return Status::Ok();
  }

 private:
  // An empty copy may come with null pointers (an empty std::vector's data()), which memcpy must never
  // get, even for 0 bytes (UBSan: "null pointer passed as argument 2").
  static void Copy(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
};

}  // namespace

std::unique_ptr<Memory> NewHostMemory() { return std::make_unique<HostMemory>(); }

}  // namespace ringmaster::memory
