// Streaming a whole file to or from the disk with the CRC32C overlapped: large
// files go through direct IO (O_DIRECT) in 8 MiB chunks while a helper thread
// checksums (and, for an unaligned source, copies) the neighbouring chunk, so
// the disk never waits for the CPU. Direct IO skips the page cache: no copy
// through it, no readahead limits, no memory pressure on a shared node, and the
// same speed whether or not the file was cached.
//
// Where the file system refuses O_DIRECT (tmpfs, some network file systems) or
// a request turns out unaligned, both fall back to ordinary buffered IO for the
// rest of the file: the same bytes, only slower. Small files (under 1 MiB) are
// plain buffered IO.
//
// Errors: as ErrnoStatus (file_io.h), naming `path`; ReadStreaming returns
// DataLoss when the file ends before buffer.size bytes. Ownership: the caller
// keeps the descriptor and the memory. Thread-safety: one call per descriptor
// at a time (a call changes the descriptor's O_DIRECT flag); each call runs
// its helper work on threads that end before it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "worker-runtime/checkpoint/byte_buffer.h"

namespace ringmaster::checkpoint {

// Writes `data` from offset 0 of `fd` (an empty regular file open for writing) and sets *crc (may be null)
// to its CRC32C. Does not fsync: the caller makes it durable.
Status WriteStreaming(int fd, std::span<const std::byte> data, const std::string& path, uint32_t* crc);

// Reads buffer.size bytes from offset 0 of `fd` (a regular file open for reading) into buffer (whose
// capacity ByteBuffer::Allocate rounded up) and sets *crc (may be null) to their CRC32C.
Status ReadStreaming(int fd, ByteBuffer& buffer, const std::string& path, uint32_t* crc);

// Reads dest.size() bytes from offset 0 of `fd` into caller-owned memory (any alignment, any size) and sets
// *crc (may be null) to the CRC32C of the bytes as they landed in `dest`. Memory aligned to
// kDirectIoAlignment is read into directly, except for a partial last block; unaligned memory through a
// reused aligned bounce buffer of at most 8 MiB (direct IO into it, then a copy), which is allocated per call
// (ResourceExhausted when it cannot be). On an error the contents of `dest` are unspecified.
Status ReadStreaming(int fd, std::span<std::byte> dest, const std::string& path, uint32_t* crc);

}  // namespace ringmaster::checkpoint
