// The phase file: where a worker program tells ringmaster-run whether its training thread is inside a
// collective, so that the killcoll chaos action (collective_killer.h) can kill it there rather than at a
// step boundary. ringmaster-run names one per worker in RINGMASTER_PHASE_FILE (OUT/phase.<worker>); a
// program without that variable writes nothing.
//
// Format: one record of kPhaseRecordSize bytes at offset 0, rewritten in place with one pwrite each time
// (no fsync: only a live reader on this host looks at it): "C <step>\n" from right before the program submits
// step <step>'s collective (the trainer: its gradient allreduce) until it returned, "- <step>\n" once it
// returned (with or without an error); <step> is 20 zero-padded decimal digits. A reader that froze the writer
// (SIGSTOP) first sees a whole record: a pwrite of 23 bytes into one page is not split by a stop.
// Thread-safety: a PhaseFile is for one thread (the training thread); readers are other processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace ringmaster::run {

inline constexpr char kPhaseFileEnv[] = "RINGMASTER_PHASE_FILE";
inline constexpr size_t kPhaseRecordSize = 23;  // phase, space, 20 digits, newline

struct Phase {
  bool in_collective = false;  // "C": submitted and not returned
  int64_t step = 0;
};

// The writer's side. A default-constructed PhaseFile (no path) writes nothing.
class PhaseFile {
 public:
  PhaseFile() = default;
  // Creates or truncates `path` and writes "- 0". Errors: Internal naming the path and errno's text.
  static StatusOr<PhaseFile> Open(const std::string& path);
  PhaseFile(PhaseFile&& other) noexcept;
  PhaseFile& operator=(PhaseFile&& other) noexcept;
  PhaseFile(const PhaseFile&) = delete;
  PhaseFile& operator=(const PhaseFile&) = delete;
  ~PhaseFile();

  // Records "C <step>" (Enter) or "- <step>" (Leave). A failed write is ignored: the file is a test's aid,
  // never a reason to stop training.
  void Enter(int64_t step) { Write('C', step); }
  void Leave(int64_t step) { Write('-', step); }

 private:
  void Write(char phase, int64_t step);
  int fd_ = -1;
};

// The record in `path`. Errors: NotFound when there is no such file; DataLoss when it holds no whole record
// (being created).
StatusOr<Phase> ReadPhase(const std::string& path);

}  // namespace ringmaster::run
