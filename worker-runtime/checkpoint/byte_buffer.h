// ByteBuffer: an owned byte buffer without the zero-fill of std::vector, its
// start aligned for direct (O_DIRECT) IO, so that a checkpoint blob is read from
// the disk straight into it and an aligned snapshot is written from it without
// a staging copy.
//
// Errors: Allocate returns ResourceExhausted when the memory cannot be had (it
// never throws). Ownership: the buffer owns its memory. Thread-safety: a value;
// one writer at a time.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>

#include "base/status.h"

namespace ringmaster::checkpoint {

// Alignment (of memory, file offsets and lengths) that O_DIRECT accepts on every Linux block device
// (logical blocks of 512 or 4096 bytes).
inline constexpr size_t kDirectIoAlignment = 4096;

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

struct ByteBuffer {
  std::unique_ptr<std::byte[], FreeDeleter> data;
  size_t size = 0;      // bytes in use
  size_t capacity = 0;  // bytes allocated: a multiple of kDirectIoAlignment, at least size

  std::span<const std::byte> span() const { return {data.get(), size}; }

  // `size` uninitialized bytes, the start aligned to kDirectIoAlignment, the capacity a multiple of it.
  static StatusOr<ByteBuffer> Allocate(size_t size);
};

}  // namespace ringmaster::checkpoint
