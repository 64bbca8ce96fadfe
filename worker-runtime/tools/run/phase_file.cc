#include "worker-runtime/tools/run/phase_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace ringmaster::run {

StatusOr<PhaseFile> PhaseFile::Open(const std::string& path) {
  PhaseFile file;
  file.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file.fd_ < 0) return InternalError("phase file " + path + ": " + std::strerror(errno));
  file.Leave(0);
  return file;
}

PhaseFile::PhaseFile(PhaseFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

PhaseFile& PhaseFile::operator=(PhaseFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

PhaseFile::~PhaseFile() {
  if (fd_ >= 0) ::close(fd_);
}

void PhaseFile::Write(char phase, int64_t step) {
  if (fd_ < 0) return;
  char record[kPhaseRecordSize + 1];
  std::snprintf(record, sizeof record, "%c %020lld\n", phase, static_cast<long long>(step));
  (void)!::pwrite(fd_, record, kPhaseRecordSize, 0);
}

StatusOr<Phase> ReadPhase(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("no phase file " + path);
    return InternalError("phase file " + path + ": " + std::strerror(errno));
  }
  char record[kPhaseRecordSize + 1] = {};
  const ssize_t n = ::pread(fd, record, kPhaseRecordSize, 0);
  ::close(fd);
  long long step = -1;
  char phase = 0, end = 0;
  if (n != static_cast<ssize_t>(kPhaseRecordSize) || std::sscanf(record, "%c %20lld%c", &phase, &step, &end) != 3 ||
      (phase != 'C' && phase != '-') || end != '\n' || step < 0) {
    return DataLossError("phase file " + path + " holds no whole record");
  }
  return Phase{phase == 'C', step};
}

}  // namespace ringmaster::run
