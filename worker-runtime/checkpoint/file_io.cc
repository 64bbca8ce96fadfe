#include "worker-runtime/checkpoint/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "worker-runtime/checkpoint/streaming_io.h"

namespace ringmaster::checkpoint {
namespace {

// Closes a file descriptor on scope exit unless released.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

}  // namespace

Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT: return ResourceExhaustedError(std::move(message));
    case ENOENT: return NotFoundError(std::move(message));
    case EEXIST: return AlreadyExistsError(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS: return PermissionDeniedError(std::move(message));
    case EINTR:
    case EAGAIN: return UnavailableError(std::move(message));
    default: return UnknownError(std::move(message));
  }
}

Status WriteFileDurably(const std::string& path, std::span<const std::byte> data, uint32_t* crc) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "create", path);
  FdCloser closer(fd);
  RINGMASTER_RETURN_IF_ERROR(WriteStreaming(fd, data, path, crc));
  if (::fsync(fd) != 0) return ErrnoStatus(errno, "fsync", path);
  if (::close(closer.Release()) != 0) return ErrnoStatus(errno, "close", path);
  return Status::Ok();
}

Status SyncDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open directory", path);
  FdCloser closer(fd);
  if (::fsync(fd) != 0) return ErrnoStatus(errno, "fsync directory", path);
  return Status::Ok();
}

namespace {

// Opens the regular file at `path` for reading and checks its size as ReadRegularFile describes; the
// descriptor (the caller closes it) and the size.
StatusOr<std::pair<int, uint64_t>> OpenRegularFile(const std::string& path, int64_t expected_size, uint64_t max_size) {
  // O_NONBLOCK: opening a FIFO planted under a blob's name must not block.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ELOOP) return DataLossError(path + ": is a symbolic link, not a regular file");
    return ErrnoStatus(errno, "open", path);
  }
  FdCloser closer(fd);
  struct stat st{};
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) return DataLossError(path + ": not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (expected_size >= 0 && size != static_cast<uint64_t>(expected_size)) {
    return DataLossError(path + ": size " + std::to_string(size) + " bytes, manifest says " +
                         std::to_string(expected_size) +
                         (size < static_cast<uint64_t>(expected_size) ? " (truncated)" : " (extended)"));
  }
  if (expected_size < 0 && size > max_size) {
    return DataLossError(path + ": " + std::to_string(size) + " bytes, more than the " + std::to_string(max_size) +
                         "-byte limit");
  }
  return std::make_pair(closer.Release(), size);
}

}  // namespace

StatusOr<ByteBuffer> ReadRegularFile(const std::string& path, int64_t expected_size, uint64_t max_size, uint32_t* crc) {
  RINGMASTER_ASSIGN_OR_RETURN(const auto opened, OpenRegularFile(path, expected_size, max_size));
  FdCloser closer(opened.first);
  RINGMASTER_ASSIGN_OR_RETURN(ByteBuffer buffer, ByteBuffer::Allocate(opened.second));
  RINGMASTER_RETURN_IF_ERROR(ReadStreaming(opened.first, buffer, path, crc));
  return buffer;
}

Status ReadRegularFileInto(const std::string& path, std::span<std::byte> dest, uint32_t* crc) {
  RINGMASTER_ASSIGN_OR_RETURN(const auto opened, OpenRegularFile(path, static_cast<int64_t>(dest.size()), 0));
  FdCloser closer(opened.first);
  return ReadStreaming(opened.first, dest, path, crc);
}

StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return ErrnoStatus(errno, "list", path);
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) break;
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoStatus(err, "list", path);
  return names;
}

StatusOr<uint64_t> RegularFileSize(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) return DataLossError(path + ": not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

StatusOr<std::time_t> NewestMtime(const std::string& dir) {
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", dir);
  std::time_t newest = st.st_mtime;
  RINGMASTER_ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDirectory(dir));
  for (const std::string& name : names) {
    if (::lstat((dir + "/" + name).c_str(), &st) == 0) newest = std::max(newest, st.st_mtime);
  }
  return newest;
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);  // non-throwing overload; does not follow symlinks
  if (ec) return ErrnoStatus(ec.value(), "remove", path);
  return Status::Ok();
}

Status MakeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return ErrnoStatus(ec.value(), "create directory", path);
  return Status::Ok();
}

}  // namespace ringmaster::checkpoint
