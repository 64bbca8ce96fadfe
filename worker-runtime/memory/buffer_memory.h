// Where collective buffers live: host memory for Gloo, CUDA memory for NCCL.
// Programs (the benchmark, the example trainer) fill and read buffers on the
// host and move them through this interface.
//
// Thread-safety: one user at a time.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"
#include "worker-runtime/comm/communicator.h"

namespace ringmaster::memory {

class Memory {
 public:
  virtual ~Memory() = default;
  // Errors: ResourceExhausted.
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  // Both return once the bytes are in place: a collective started after Upload, on any stream, reads them.
  // Errors: Internal (the copy failed).
  virtual Status Upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual Status Download(void* host_dst, const void* src, size_t bytes) = 0;
};

// Host memory (malloc/memcpy).
std::unique_ptr<Memory> NewHostMemory();

// Memory of this kind: CUDA memory on `device` for kCuda (NCCL's buffers), host otherwise.
std::unique_ptr<Memory> NewMemoryFor(comm::MemoryKind kind, int device);

}  // namespace ringmaster::memory
