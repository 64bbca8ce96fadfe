// Durable-file primitives for the checkpoint store: POSIX calls wrapped so that
// every failure comes back as a Status naming the path and the errno text.
//
// Errors (from errno): ENOSPC/EDQUOT -> ResourceExhausted, ENOENT -> NotFound,
// EEXIST -> AlreadyExists, EACCES/EPERM/EROFS -> PermissionDenied,
// EINTR/EAGAIN -> Unavailable, anything else -> Unknown.
// Thread-safety: the functions share no state; call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/checkpoint/byte_buffer.h"

namespace ringmaster::checkpoint {

// Status for errno `err` with "what path: strerror" as its message.
Status ErrnoStatus(int err, const std::string& what, const std::string& path);

// Creates `path` (which must not exist), writes `data`, fsyncs and closes it.
// Stores the CRC32C of the data in *crc (computed while the previous chunk is
// written; large files go through direct IO, see streaming_io.h).
Status WriteFileDurably(const std::string& path, std::span<const std::byte> data, uint32_t* crc);

// fsyncs a directory, making the entries created/renamed in it durable.
Status SyncDirectory(const std::string& path);

// Reads the regular file at `path`. Refuses (never hangs on) FIFOs, devices and
// directories. When expected_size >= 0 the file must have exactly that size;
// otherwise it must be at most max_size bytes. Errors: NotFound when absent,
// DataLoss naming the file when it has the wrong type or size (a truncated or
// extended file), else as ErrnoStatus; ResourceExhausted when the buffer cannot
// be allocated. When `crc` is not null it receives the CRC32C of the bytes read
// (computed on one chunk while the next is read; large files are read with
// direct IO into an aligned buffer, see streaming_io.h).
StatusOr<ByteBuffer> ReadRegularFile(const std::string& path, int64_t expected_size, uint64_t max_size,
                                     uint32_t* crc = nullptr);

// ReadRegularFile with `expected_size` dest.size(), into caller-owned memory (any alignment; see
// streaming_io.h). Errors: as ReadRegularFile, and ResourceExhausted when the bounce buffer for unaligned
// memory cannot be allocated. On an error the contents of `dest` are unspecified, except that nothing is
// written when the file cannot be opened or has the wrong type or size.
Status ReadRegularFileInto(const std::string& path, std::span<std::byte> dest, uint32_t* crc = nullptr);

// The names in a directory (without "." and ".."). Errors: as ErrnoStatus.
StatusOr<std::vector<std::string>> ListDirectory(const std::string& path);

// Size of a regular file, or an error (NotFound when absent).
StatusOr<uint64_t> RegularFileSize(const std::string& path);

// The newest modification time of a directory and its direct entries (the age
// of a writer's activity in it). Errors: as ErrnoStatus.
StatusOr<std::time_t> NewestMtime(const std::string& dir);

// Deletes a directory tree (not following symlinks). Errors: as ErrnoStatus.
Status RemoveTree(const std::string& path);

// Creates the directory and its parents (like mkdir -p).
Status MakeDirectories(const std::string& path);

}  // namespace ringmaster::checkpoint
