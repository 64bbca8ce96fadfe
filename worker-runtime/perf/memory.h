// Where benchmark buffers live: host memory for Gloo, CUDA memory for NCCL.
// The benchmark fills and checks buffers on the host and moves them through
// this interface.
//
// Thread-safety: one user at a time.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"
#include "comm/communicator.h"

namespace ringmaster::runtime::perf {

class Memory {
 public:
  virtual ~Memory() = default;
  // Errors: ResourceExhausted.
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  virtual Status Upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual Status Download(void* host_dst, const void* src, size_t bytes) = 0;
};

// Host memory (malloc/memcpy).
std::unique_ptr<Memory> NewHostMemory();

// Memory for comm's buffers: CUDA memory on `device` for NCCL, host otherwise.
std::unique_ptr<Memory> NewMemoryFor(const Communicator& comm, int device);

}  // namespace ringmaster::runtime::perf
