// CheckpointStore: checkpoints on a shared path, committed atomically, loaded
// only when complete and verified.
//
// Layout under options.dir:
//   step-<N>/                     a committed checkpoint (N = training step)
//     MANIFEST.json               written last (manifest.h)
//     <blob name>                 one file per blob (model, optimizer, cursor...)
//   .tmp-step-<N>-<pid>-<rand>/   a save in progress (or a crashed one)
//   .trash-<...>/                 a checkpoint being deleted
//
// Commit protocol (Save): write every blob into a fresh temp directory, fsync
// each file; write the manifest last, fsync it and the temp directory; rename
// the temp directory to step-<N> (atomically, on the same file system) and
// fsync the parent. A reader therefore sees either no step-<N> or a complete
// one; a crash at any point leaves at worst a temp directory, which a later
// Save (or CollectGarbage) removes once it is older than stale_temp_age.
// Re-saving an existing step swaps the new directory in with renameat2
// (RENAME_EXCHANGE), so step-<N> never disappears.
//
// Retention: after each commit, the newest keep_last complete checkpoints are
// kept; older step directories are first renamed to .trash-* (so they vanish
// from readers atomically) and then deleted.
//
// Loading: LoadLatest walks the step directories newest first and returns the
// first that verifies (manifest parses, every blob present with the listed size
// and CRC32C); each one skipped is logged with the reason through
// options.log. Corrupt input never crashes or hangs the loader.
//
// Concurrency: one writing process per directory (e.g. rank 0) -- two
// writers would still never expose a partial checkpoint, but could delete each
// other's temp directories older than stale_temp_age. Any number of readers, in
// any process, may load while a writer saves.
// Thread-safety: all methods are thread-safe; Save and CollectGarbage are
// serialized internally, loads run concurrently with them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "base/status.h"
#include "checkpoint/file_io.h"
#include "checkpoint/manifest.h"

namespace ringmaster::runtime::checkpoint {

struct CheckpointOptions {
  std::string dir;                                  // created if absent
  int keep_last = 3;                                // >= 1 complete checkpoints kept
  std::chrono::seconds stale_temp_age{600};         // temp dirs idle this long are crash leftovers
  LogSink log;  // a line per notable event (a skipped checkpoint and why, a deleted one); may be empty
};

// One named blob to save; the bytes are only read during the call.
struct BlobRef {
  std::string_view name;
  std::span<const std::byte> data;
};

// OK when a save of `blobs` at `step` could succeed: step >= 0, world_size >= 1, valid and distinct
// blob names. Errors: InvalidArgument naming the problem. Both CheckpointStore::Save and the async
// writer check with it, so the async writer refuses at call time what the store would refuse later.
Status ValidateSave(int64_t step, uint32_t world_size, std::span<const BlobRef> blobs);

// Figures for metrics, one per successful save.
struct SaveResult {
  int64_t step = 0;
  uint64_t bytes = 0;            // blob bytes written (manifest excluded)
  double seconds = 0;            // whole commit: write + fsync + rename + retention
  double snapshot_seconds = 0;   // async saves: time the caller spent copying its bytes
  int removed_checkpoints = 0;   // old checkpoints deleted by retention
  std::string path;              // the committed step directory
};

// Figures for metrics, one per successful restore.
struct RestoreResult {
  int64_t step = 0;
  uint64_t bytes = 0;
  double seconds = 0;            // read + verify, including skipped checkpoints
  int skipped = 0;               // newer checkpoints skipped as incomplete or corrupt
};

struct LoadedCheckpoint {
  Manifest manifest;
  std::map<std::string, ByteBuffer, std::less<>> blobs;  // by blob name
  std::string path;
  RestoreResult stats;
};

class CheckpointStore {
 public:
  // Creates options.dir if needed. Errors: InvalidArgument for an empty dir
  // or keep_last < 1; file system errors as in file_io.h.
  static StatusOr<std::unique_ptr<CheckpointStore>> Open(CheckpointOptions options);

  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  // Commits a checkpoint of `blobs` for `step` (see the protocol above), then
  // applies retention. Errors: InvalidArgument (negative step, world_size 0,
  // a bad or duplicate blob name); file system errors (ResourceExhausted when
  // the disk is full, ...), after which the temp directory is removed and no
  // checkpoint changes. A retention failure is logged, not returned.
  StatusOr<SaveResult> Save(int64_t step, uint32_t world_size, std::span<const BlobRef> blobs);

  // The newest complete, verified checkpoint. Errors: NotFound when there is
  // none (the message lists what was skipped and why).
  StatusOr<LoadedCheckpoint> LoadLatest() const;

  // Loads and verifies step-<step>. Errors: NotFound when absent; DataLoss
  // naming the file and the problem when incomplete or corrupt.
  StatusOr<LoadedCheckpoint> Load(int64_t step) const;

  // Steps with a step-<N> directory, newest first (complete or not).
  StatusOr<std::vector<int64_t>> ListSteps() const;

  // Retention and crash cleanup (also run by every Save): removes trash,
  // temp directories idle longer than stale_temp_age, and step directories
  // older than the newest keep_last complete ones. Returns how many
  // checkpoints were deleted.
  StatusOr<int> CollectGarbage();

  const std::string& dir() const { return options_.dir; }

 private:
  explicit CheckpointStore(CheckpointOptions options) : options_(std::move(options)) {}

  void Log(const std::string& line) const;
  std::string StepPath(int64_t step) const;
  // Cheap completeness check for retention: manifest parses, blob sizes match.
  Status CheckComplete(int64_t step) const;
  StatusOr<int> CollectGarbageLocked();
  Status Commit(const std::string& tmp, int64_t step);
  std::string UniqueSuffix();

  // Constant after construction.
  const CheckpointOptions options_;

  // Serializes writers (Save, CollectGarbage).
  std::mutex write_mu_;
  uint64_t unique_counter_ = 0;  // guarded by write_mu_
};

// Parses "step-<N>" (N decimal, no sign, no leading zeros); -1 otherwise.
int64_t ParseStepDirName(std::string_view name);

}  // namespace ringmaster::runtime::checkpoint
