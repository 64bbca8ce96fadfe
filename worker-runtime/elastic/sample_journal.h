// SampleJournal: an exactly-once record of which samples were trained on, that
// survives rollbacks. Each worker appends to its own file:
//   "A <generation> <step> <epoch> <sample>"  its share of a step, written
//                                             BEFORE the step's allreduce;
//   "R <generation> <step>"                   after a rebuild: the world
//                                             resumed at <step> in <generation>.
// A step attempted in generation g counts iff no later generation restored to a
// step <= it, and it is below the final step. ResolveJournals applies that rule
// to every worker's file and yields "epoch sample" lines in step order: the
// samples of committed steps, each once. <generation> is any number that grows
// with every rebuild, also a rebuild of the same membership (the driver's
// StepContext::incarnation).
//
// Why before the allreduce: a step is committed somewhere only if every rank's
// share went into the sum, i.e. every rank wrote its lines first; a rank that
// died before writing never contributed, so that attempt is rolled back.
//
// Thread-safety: SampleJournal is thread-compatible; one writer per file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::elastic {

class SampleJournal {
 public:
  // Opens (appends to) `path`. Errors: Unavailable naming the path.
  static StatusOr<SampleJournal> Open(const std::string& path);
  SampleJournal(SampleJournal&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  SampleJournal& operator=(SampleJournal&&) = delete;
  ~SampleJournal();

  // One write() per call, so a killed worker leaves whole lines.
  Status Attempt(int64_t generation, int64_t step, uint64_t epoch, const std::vector<uint64_t>& samples);
  Status Restored(int64_t generation, int64_t step);

 private:
  explicit SampleJournal(int fd) : fd_(fd) {}
  Status Append(const std::string& text);
  int fd_;
};

struct ResolvedSample {
  int64_t step;
  uint64_t epoch;
  uint64_t sample;
};

// Reads every journal file and returns the committed samples, ordered by step.
// `final_step`: the number of committed steps at the end. Torn last lines are
// skipped. Errors: Unavailable when a file cannot be read.
StatusOr<std::vector<ResolvedSample>> ResolveJournals(const std::vector<std::string>& paths, int64_t final_step);

}  // namespace ringmaster::elastic
