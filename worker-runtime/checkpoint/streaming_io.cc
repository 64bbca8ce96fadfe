#include "worker-runtime/checkpoint/streaming_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <system_error>
#include <vector>

#include "worker-runtime/checkpoint/crc32c.h"
#include "worker-runtime/checkpoint/file_io.h"

namespace ringmaster::checkpoint {
namespace {

constexpr size_t kChunk = size_t{8} << 20;       // per request: large enough for full-size device requests
constexpr size_t kStreamFrom = size_t{1} << 20;  // smaller files: plain buffered IO
constexpr size_t kReaders = 2;                   // reads in flight (dd has one)

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Turns O_DIRECT on or off for `fd`; false when the file system refuses.
bool SetDirect(int fd, bool on) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return false;
  return ::fcntl(fd, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) == 0;
}

bool IsDirect(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_DIRECT) != 0;
}

// `task` run here, as a future.
template <typename Task>
auto Ready(const Task& task) -> std::future<decltype(task())> {
  std::promise<decltype(task())> done;
  done.set_value(task());
  return done.get_future();
}

// Runs `task` on a thread of its own; inline when no thread can be started (no exception escapes).
template <typename Task>
auto Launch(const Task& task) -> std::future<decltype(task())> {
  try {
    return std::async(std::launch::async, task);
  } catch (const std::system_error&) {
    return Ready(task);
  }
}

// pwrite of all `len` bytes at `offset`. EINVAL under O_DIRECT (a file system or request it refuses):
// O_DIRECT off, then the same write buffered.
Status PwriteAll(int fd, const std::byte* p, size_t len, size_t offset, const std::string& path) {
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && IsDirect(fd) && SetDirect(fd, false)) continue;
      return ErrnoStatus(errno, "write", path);
    }
    p += n;
    offset += static_cast<size_t>(n);
    len -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// pread until `len` bytes or the end of the file; the bytes read. EINVAL under O_DIRECT (also a short
// read that left the offset unaligned): O_DIRECT off, then buffered from there.
StatusOr<size_t> PreadFull(int fd, std::byte* p, size_t len, size_t offset, const std::string& path) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && IsDirect(fd) && SetDirect(fd, false)) continue;
      return ErrnoStatus(errno, "read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// Faults in fresh memory (one store per page), so that a direct read into it does not stop for that.
void Prefault(std::byte* p, size_t len) {
  for (size_t at = 0; at < len; at += kDirectIoAlignment) static_cast<volatile std::byte*>(p)[at] = std::byte{0};
}

}  // namespace

Status WriteStreaming(int fd, std::span<const std::byte> data, const std::string& path, uint32_t* crc) {
  const bool direct = data.size() >= kStreamFrom && SetDirect(fd, true);
  size_t aligned = direct ? data.size() / kDirectIoAlignment * kDirectIoAlignment : 0;
  const bool zero_copy = reinterpret_cast<uintptr_t>(data.data()) % kDirectIoAlignment == 0;
  ByteBuffer staging;  // two chunks, alternating, when the source itself is not aligned
  if (aligned > 0 && !zero_copy) {
    StatusOr<ByteBuffer> allocated = ByteBuffer::Allocate(2 * kChunk);
    if (allocated.ok()) {
      staging = std::move(allocated).value();
    } else {
      aligned = 0;  // no memory for staging: buffered
    }
  }
  uint32_t c = 0;
  std::future<Status> writing;  // the previous chunk's write; destroyed (so waited for) before staging
  for (size_t offset = 0, i = 0; offset < aligned; ++i) {
    const size_t len = std::min(kChunk, aligned - offset);
    const std::byte* src = data.data() + offset;
    c = Crc32cExtend(c, src, len);  // while the previous chunk is being written
    if (!zero_copy) {
      // Slot i % 2 was last used by chunk i - 2, whose write ended before chunk i - 1's began.
      std::byte* slot = staging.data.get() + (i % 2) * kChunk;
      std::memcpy(slot, src, len);
      src = slot;
    }
    if (writing.valid()) RINGMASTER_RETURN_IF_ERROR(writing.get());
    auto write = [fd, src, len, offset, &path] { return PwriteAll(fd, src, len, offset, path); };
    writing = aligned > kChunk ? Launch(write) : Ready(write);  // one chunk: nothing to overlap
    offset += len;
  }
  if (writing.valid()) RINGMASTER_RETURN_IF_ERROR(writing.get());
  if (aligned < data.size()) {  // the unaligned tail (or the whole of a small file): buffered
    if (direct) (void)SetDirect(fd, false);
    c = Crc32cExtend(c, data.data() + aligned, data.size() - aligned);
    RINGMASTER_RETURN_IF_ERROR(PwriteAll(fd, data.data() + aligned, data.size() - aligned, aligned, path));
  }
  if (crc != nullptr) *crc = c;
  return Status::Ok();
}

namespace {

// An unaligned destination: per request, read into the reader's own bounce slot and copied out by the reader
// while the other reader's request is at the disk (1-8 MiB measured alike on a loaded 2-core VM; 8 MiB of
// slots in all).
constexpr size_t kBounceChunk = size_t{4} << 20;

// The chunks of one read pass: which are read, and the first error. Shared by the pass's reader threads and
// the checksumming caller.
class ChunkBoard {
 public:
  explicit ChunkBoard(size_t chunks) : read_(chunks, false) {}

  void MarkRead(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    read_[i] = true;
    cv_.notify_all();
  }
  // Records the first error; false (what a reader returns when it stops).
  bool Fail(Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = std::move(status);
    cv_.notify_all();
    return false;
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !error_.ok();
  }
  // Waits until chunk i is read (true) or a reader failed (false).
  bool WaitRead(size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return read_[i] || !error_.ok(); });
    return error_.ok();
  }
  Status error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> read_;  // guarded by mu_
  Status error_;            // guarded by mu_
};

// One read pass: bytes [begin, end) of `fd` (a file of `size` bytes) into dest + begin, in chunks of
// `chunk` bytes, extending *c. Without `bounce` each chunk is read straight into dest, under direct IO
// with its length rounded up to whole blocks (the caller guarantees room: only the last chunk can be
// short, and dest has room past `end` when it is). With `bounce` (aligned, one `chunk`-byte slot per
// reader) each reader reads its chunks into its own slot and copies them into dest. Either way they are
// checksummed in dest, as they landed.
Status ReadPass(int fd, std::byte* dest, size_t begin, size_t end, size_t size, size_t chunk, bool direct,
                ByteBuffer* bounce, const std::string& path, uint32_t* c) {
  const size_t chunks = (end - begin + chunk - 1) / chunk;
  ChunkBoard board(chunks);
  // Reader r reads chunks r, r + kReaders, ...: while one waits for the disk, the other faults in its next
  // chunk's fresh pages (the kernel would otherwise do that before issuing the read) and issues it, so the
  // disk always has a request; meanwhile this thread checksums (and copies out) the chunks in order.
  auto reader = [&](size_t first) {
    for (size_t i = first; i < chunks && !board.failed(); i += kReaders) {
      const size_t offset = begin + i * chunk, want = std::min(chunk, end - offset);
      std::byte* const into = bounce != nullptr ? bounce->data.get() + first * chunk : dest + offset;
      Prefault(into, want);
      // Under O_DIRECT the request is rounded up to whole blocks; at the end of the file it comes back short.
      StatusOr<size_t> got = PreadFull(fd, into, direct ? RoundUp(want, kDirectIoAlignment) : want, offset, path);
      if (!got.ok()) return board.Fail(got.status());
      if (*got < want) {
        return board.Fail(DataLossError(path + ": ended after " + std::to_string(offset + *got) + " of " +
                                        std::to_string(size) + " bytes (truncated while reading)"));
      }
      if (bounce != nullptr) std::memcpy(dest + offset, into, want);
      board.MarkRead(i);
    }
    return true;
  };
  std::vector<std::future<bool>> readers;  // joined (waited for) before `board` goes
  for (size_t r = 0; r < std::min(kReaders, chunks); ++r) {
    auto read_share = [&reader, r] { return reader(r); };
    readers.push_back(chunks > 1 ? Launch(read_share) : Ready(read_share));  // one chunk: no thread
  }
  for (size_t i = 0; i < chunks && board.WaitRead(i); ++i) {
    const size_t offset = begin + i * chunk, len = std::min(chunk, end - offset);
    *c = Crc32cExtend(*c, dest + offset, len);
  }
  for (std::future<bool>& r : readers) r.get();
  return board.error();
}

// Reads `size` bytes from offset 0 of `fd` into `dest`. `room`: dest has room for `size` rounded up to
// kDirectIoAlignment (a ByteBuffer's capacity), so a direct read may run past `size`.
Status ReadInto(int fd, std::byte* dest, size_t size, bool room, const std::string& path, uint32_t* crc) {
  const bool aligned = reinterpret_cast<uintptr_t>(dest) % kDirectIoAlignment == 0;
  const bool direct = size >= kStreamFrom && SetDirect(fd, true);
  if (!direct) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // larger readahead
  // Read straight into dest: everything when buffered; under direct IO, when dest is aligned, its whole
  // blocks (all of it when it has room to round the last one up). The rest -- an unaligned destination, or
  // an aligned one's partial last block -- goes through a small aligned bounce buffer, still direct.
  const size_t straight = !direct ? size : !aligned ? 0 : room ? size : size / kDirectIoAlignment * kDirectIoAlignment;
  uint32_t c = 0;
  if (straight > 0) {
    RINGMASTER_RETURN_IF_ERROR(ReadPass(fd, dest, 0, straight, size, kChunk, direct, nullptr, path, &c));
  }
  if (straight < size) {
    const size_t rest = size - straight;
    const size_t chunk = std::min(kBounceChunk, RoundUp(rest, kDirectIoAlignment));
    const size_t readers = std::min(kReaders, (rest + chunk - 1) / chunk);
    StatusOr<ByteBuffer> bounce = ByteBuffer::Allocate(readers * chunk);
    if (!bounce.ok()) return bounce.status().WithContext("reading " + path);
    RINGMASTER_RETURN_IF_ERROR(ReadPass(fd, dest, straight, size, size, chunk, direct, &*bounce, path, &c));
  }
  if (crc != nullptr) *crc = c;
  return Status::Ok();
}

}  // namespace

Status ReadStreaming(int fd, ByteBuffer& buffer, const std::string& path, uint32_t* crc) {
  return ReadInto(fd, buffer.data.get(), buffer.size, buffer.capacity >= RoundUp(buffer.size, kDirectIoAlignment), path,
                  crc);
}

Status ReadStreaming(int fd, std::span<std::byte> dest, const std::string& path, uint32_t* crc) {
  return ReadInto(fd, dest.data(), dest.size(), false, path, crc);
}

}  // namespace ringmaster::checkpoint
