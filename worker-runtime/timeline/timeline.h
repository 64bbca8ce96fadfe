// An optional Chrome-trace (chrome://tracing, Perfetto) JSON file of every
// collective's phases, like HOROVOD_TIMELINE: QUEUE (submitted -> agreed by
// all ranks), NEGOTIATE, FUSE (copy into the fusion buffer), RUN (the
// collective), UNFUSE (copy out).
//
// Ownership: owns the file; the destructor closes the JSON array.
// Thread-safety: Record may be called from any thread.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::timeline {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates (truncates) path. Errors: Unavailable when it cannot be opened.
  static StatusOr<std::unique_ptr<Timeline>> Open(const std::string& path, int rank);
  ~Timeline();

  // One complete event: `phase` of the collective on `tensor`, on the track of
  // `process_set` (a trace "thread"), from start to end. `detail` goes to args.
  void Record(std::string_view tensor, std::string_view phase, int process_set, Clock::time_point start,
              Clock::time_point end, std::string_view detail = {});

 private:
  Timeline(std::FILE* file, int rank);

  // Constant after construction.
  const int rank_;
  const Clock::time_point origin_;

  std::mutex mu_;
  // Guarded by mu_.
  std::FILE* file_;
  bool first_ = true;
};

// The timeline a rank writes for a configured path (RuntimeConfig::timeline_path): "{rank}" in
// `path` is replaced by the rank and every rank writes its own; without it only rank 0 writes.
// Returns nullptr when `path` is empty or this rank writes none. Makes the file's folder when missing.
// Errors: those of Open.
StatusOr<std::unique_ptr<Timeline>> OpenTimelineForRank(const std::string& path, int rank);

}  // namespace ringmaster::timeline
