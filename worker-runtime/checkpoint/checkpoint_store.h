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
// options.log. Corrupt input never crashes or hangs the loader. Load and
// LoadLatest return the blobs in fresh buffers; LoadInto and LoadLatestInto
// read them into memory the caller already has (a restarted worker's model),
// which skips first-touching new memory -- on a VM the slower part of a
// restore.
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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "base/status.h"
#include "worker-runtime/checkpoint/file_io.h"
#include "worker-runtime/checkpoint/manifest.h"

namespace ringmaster::checkpoint {

struct CheckpointOptions {
  std::string dir;                           // created if absent
  int keep_last = 3;                         // >= 1 complete checkpoints kept
  std::chrono::seconds stale_temp_age{600};  // temp dirs idle this long are crash leftovers
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
  uint64_t bytes = 0;           // blob bytes written (manifest excluded)
  double seconds = 0;           // whole commit: write + fsync + rename + retention
  double snapshot_seconds = 0;  // async saves: time the caller spent copying its bytes
  int removed_checkpoints = 0;  // old checkpoints deleted by retention
  std::string path;             // the committed step directory
};

// Figures for metrics, one per successful restore.
struct RestoreResult {
  int64_t step = 0;
  uint64_t bytes = 0;
  double seconds = 0;  // read + verify, including skipped checkpoints
  int skipped = 0;     // newer checkpoints skipped as incomplete or corrupt
};

// Where LoadInto/LoadLatestInto put one blob: caller-owned memory of exactly the blob's size, any alignment
// (memory aligned to kDirectIoAlignment, byte_buffer.h, is read into directly; other memory through a small
// bounce buffer, slower by one copy). The name and the memory are only used during the call.
struct BlobDestination {
  std::string_view name;
  std::span<std::byte> data;
};

// What LoadInto/LoadLatestInto restored: the checkpoint's manifest (every blob it lists, including those
// that had no destination and were skipped), its directory and the figures.
struct RestoredCheckpoint {
  Manifest manifest;
  std::string path;
  RestoreResult stats;  // bytes: those read into destinations
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

  // The newest complete, verified checkpoint, in freshly allocated buffers.
  // Errors: NotFound when there is none (the message lists what was skipped
  // and why); ResourceExhausted when the buffers cannot be allocated (ends the
  // walk: an older checkpoint is not tried).
  StatusOr<LoadedCheckpoint> LoadLatest() const;

  // Loads and verifies step-<step>. Errors: NotFound when absent; DataLoss
  // naming the file and the problem when incomplete or corrupt.
  StatusOr<LoadedCheckpoint> Load(int64_t step) const;

  // Restores step-<step> into caller-owned memory -- a restarted worker's
  // already built model -- instead of freshly allocated (and first-touched)
  // buffers: each blob the manifest lists is read into the destination of
  // the same name, and its CRC32C verified over every byte as it landed there.
  //
  // A blob with no destination is skipped: neither read nor verified (the
  // result's manifest still lists it). A caller restoring a model names the
  // tensors it has; a checkpoint may hold more (optimizer state an inference
  // job does not want, a blob a newer version added), and making the caller
  // allocate memory for those just to be allowed to load would defeat the
  // point. Every destination, on the other hand, must be filled.
  //
  // Errors returned before any destination is written (by this checkpoint:
  // see LoadLatestInto for the ones it skips):
  //   InvalidArgument  two destinations of the same name; a destination
  //                    whose size differs from its blob's (the message names
  //                    the blob and both sizes);
  //   NotFound         a destination whose blob the manifest does not list
  //                    (naming it); no step-<step>.
  // Errors after which the destinations' contents are unspecified (some may
  // be fully or partly written):
  //   DataLoss         the checkpoint is incomplete or corrupt (naming the
  //                    file and the problem);
  //   ResourceExhausted no memory for the bounce buffer unaligned
  //                    destinations need (8 MiB); other file system errors
  //                    as in file_io.h.
  // Thread-safety: as the other loads; the caller must not use the
  // destinations during the call.
  StatusOr<RestoredCheckpoint> LoadInto(int64_t step, std::span<const BlobDestination> destinations) const;

  // LoadInto for the newest checkpoint that verifies: walks the step
  // directories newest first like LoadLatest, skipping (and logging, through
  // options.log) those that are incomplete or corrupt -- a skipped one may
  // have written into the destinations before the older one that verifies
  // overwrote them. A checkpoint that does not fit the destinations (a
  // missing blob, a size mismatch) ends the walk with that error rather than
  // falling back: an older checkpoint of another shape is not what the caller
  // asked for. Errors: as LoadInto; NotFound when none verifies (the message
  // lists what was skipped and why), the destinations' contents then being
  // unspecified.
  StatusOr<RestoredCheckpoint> LoadLatestInto(std::span<const BlobDestination> destinations) const;

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

  // Where LoadStep reads each blob of a manifest into: one entry per manifest
  // blob, in order, of exactly its size, or std::nullopt to skip it. Called
  // after the manifest is read and checked, before any blob is read.
  using Placement = std::vector<std::optional<std::span<std::byte>>>;
  using PlaceFn = std::function<StatusOr<Placement>(const Manifest& manifest, const std::string& path)>;
  // Loads step-<step> where `place` says. An error of `place` is returned
  // as is, with *placement_failed set (the checkpoint is fine, the request
  // does not fit it).
  StatusOr<RestoredCheckpoint> LoadStep(int64_t step, const PlaceFn& place, bool* placement_failed) const;
  // LoadStep for each step newest first until one loads; each skip logged.
  StatusOr<RestoredCheckpoint> LoadNewest(const PlaceFn& place) const;
  // Load/LoadLatest: every blob into a fresh buffer of `blobs` (emptied first).
  static PlaceFn PlaceInNewBuffers(std::map<std::string, ByteBuffer, std::less<>>& blobs);
  // LoadInto/LoadLatestInto: each blob into the destination of its name (see LoadInto for the rules).
  static PlaceFn PlaceInDestinations(std::span<const BlobDestination> destinations);
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

}  // namespace ringmaster::checkpoint
