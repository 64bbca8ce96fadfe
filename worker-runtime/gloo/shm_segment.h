// A POSIX shared-memory segment (shm_open + mmap) that ranks on one host map
// to exchange data without sockets (shm_allreduce.h).
//
// Create() makes a new segment (O_EXCL, mode 0600) and reserves its memory with
// posix_fallocate, so that a full /dev/shm (a container's default is 64 MiB)
// is an error here, not a SIGBUS at the first write. Open() maps a segment
// another process created. The name stays in /dev/shm until Unlink(): unlink it
// as soon as every peer has mapped it (the mappings stay valid), so that a
// crash leaks nothing; the destructor unlinks a name this object created and
// did not unlink yet, then unmaps.
//
// Errors: Unavailable (no shared memory here: shm_open, ftruncate, fallocate or
// mmap failed; the message says which and why), NotFound (Open of a name that
// does not exist on this host).
// Ownership: owns the mapping. Thread-safety: none needed (constant after
// creation); the memory itself is shared with other processes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"

namespace ringmaster::gloo {

class ShmSegment {
 public:
  // `name` is a shm_open name ("/ringmaster-..."), `bytes` > 0.
  static StatusOr<std::unique_ptr<ShmSegment>> Create(const std::string& name, size_t bytes);
  static StatusOr<std::unique_ptr<ShmSegment>> Open(const std::string& name, size_t bytes);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Removes the name (created segments only; idempotent). The mapping stays.
  void Unlink();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, void* data, size_t size, bool owner)
      : name_(std::move(name)), data_(data), size_(size), linked_(owner) {}

  const std::string name_;
  void* const data_;
  const size_t size_;
  bool linked_;  // this object created the name and has not unlinked it
};

}  // namespace ringmaster::gloo
