#include "worker-runtime/gloo/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace ringmaster::gloo {
namespace {

std::string Why(const char* call, const std::string& name, int err) {
  return std::string("shared memory ") + name + ": " + call + ": " + std::strerror(err);
}

// Maps `fd` (closed either way).
StatusOr<void*> Map(int fd, const std::string& name, size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return UnavailableError(Why("mmap", name, err));
  return p;
}

}  // namespace

StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Create(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError(Why("shm_open", name, errno));
  // From here on a failure must remove the name it created.
  auto fail = [&](const char* call, int err) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    return UnavailableError(Why(call, name, err));
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return fail("ftruncate", errno);
  // tmpfs hands out pages at first touch; reserve them now so that a full /dev/shm fails here.
  if (int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) return fail("posix_fallocate", err);
  auto p = Map(fd, name, bytes);
  if (!p.ok()) {
    ::shm_unlink(name.c_str());
    return p.status();
  }
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, *p, bytes, /*owner=*/true));
}

StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Open(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError(Why("shm_open", name, err));
    return UnavailableError(Why("shm_open", name, err));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    ::close(fd);
    return UnavailableError("shared memory " + name + " is smaller than " + std::to_string(bytes) + " bytes");
  }
  RINGMASTER_ASSIGN_OR_RETURN(void* p, Map(fd, name, bytes));
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, p, bytes, /*owner=*/false));
}

ShmSegment::~ShmSegment() {
  Unlink();
  ::munmap(data_, size_);
}

void ShmSegment::Unlink() {
  if (!linked_) return;
  linked_ = false;
  ::shm_unlink(name_.c_str());
}

}  // namespace ringmaster::gloo
