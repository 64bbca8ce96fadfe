// The trainer's record of its agreed commits: OUT/commits.<worker>.log, one line "<step> <crc>" per step
// that every member confirmed (ElasticOptions::on_agreed: the step and the CRC32C of its encoded state,
// decimal), appended with one write(2) each, so that a worker killed at any moment leaves whole lines. Every
// rank that saw a step agreed has the same line for it: a test compares them across ranks and with a
// one-process run (elastic/elastic_collective_kill_test.cc).
// Thread-safety: Append from one thread (the driver's training thread).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace ringmaster::examples {

class CommitLog {
 public:
  // Opens `path` for appending (created when missing). Errors: Internal naming the path and errno's text.
  static StatusOr<CommitLog> Open(const std::string& path);
  CommitLog(CommitLog&& other) noexcept;
  CommitLog& operator=(CommitLog&&) = delete;
  CommitLog(const CommitLog&) = delete;
  CommitLog& operator=(const CommitLog&) = delete;
  ~CommitLog();

  // Appends "<step> <crc>\n". A failed write is ignored (the log is a test's and an audit's aid).
  void Append(int64_t step, uint32_t crc);

 private:
  CommitLog() = default;
  int fd_ = -1;
};

}  // namespace ringmaster::examples
