// Test support for the checkpoint tests: a fresh directory per test, log
// capture, and deterministic blob contents that identify their step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "worker-runtime/checkpoint/checkpoint_store.h"

namespace ringmaster::checkpoint::testing {

// A fresh, empty directory under ::testing::TempDir() named after the running
// test (and the pid, so parallel ctest runs never share it).
std::string FreshTestDir();

// Bytes that depend on (step, blob index, position): a loaded blob can be
// checked against the step its manifest claims.
std::vector<std::byte> PatternBytes(int64_t step, int blob, size_t size);

// Flips one bit of the byte at offset `at` of the file at `path` (a gtest failure when it cannot).
void FlipByte(const std::string& path, int64_t at);

// Collects log lines; thread-safe.
class LogCapture {
 public:
  LogSink fn();
  std::vector<std::string> lines() const;
  // True when some line contains every one of `parts`.
  bool Contains(const std::vector<std::string>& parts) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;  // guarded by mu_
};

}  // namespace ringmaster::checkpoint::testing
