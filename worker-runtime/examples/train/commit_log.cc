#include "worker-runtime/examples/train/commit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace ringmaster::examples {

StatusOr<CommitLog> CommitLog::Open(const std::string& path) {
  CommitLog log;
  log.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log.fd_ < 0) return InternalError("commit log " + path + ": " + std::strerror(errno));
  return log;
}

CommitLog::CommitLog(CommitLog&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

CommitLog::~CommitLog() {
  if (fd_ >= 0) ::close(fd_);
}

void CommitLog::Append(int64_t step, uint32_t crc) {
  char line[48];
  const int n = std::snprintf(line, sizeof line, "%lld %u\n", static_cast<long long>(step), crc);
  if (fd_ >= 0 && n > 0) (void)!::write(fd_, line, static_cast<size_t>(n));
}

}  // namespace ringmaster::examples
