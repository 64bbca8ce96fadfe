// AsyncCheckpointWriter: saves checkpoints in the background so that training
// continues while the previous snapshot is persisted (as Horovod elastic's
// commit-to-memory and DLRover's flash checkpoint do).
//
// Save() copies the caller's bytes into an owned snapshot and returns; a
// background thread commits it through a CheckpointStore. At most one save is
// in flight; while it runs, a newer Save() takes the single pending slot and a
// snapshot already waiting there is dropped -- the newest snapshot wins (the
// dropped one is counted as superseded). Save() therefore never waits for disk;
// memory is bounded by two snapshots (the one being written and the pending
// one) plus the caller's own copy.
//
// The destructor persists what was accepted (the in-flight and the pending
// snapshot) before joining the thread, so a clean shutdown loses nothing.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"

namespace ringmaster::checkpoint {

class AsyncCheckpointWriter {
 public:
  struct Stats {
    uint64_t accepted = 0;    // Save() calls that took a snapshot
    uint64_t committed = 0;   // snapshots committed to disk
    uint64_t failed = 0;      // snapshots whose commit failed
    uint64_t superseded = 0;  // snapshots dropped for a newer one before being written
  };

  // `store` is not owned and must outlive the writer.
  explicit AsyncCheckpointWriter(CheckpointStore* store);
  ~AsyncCheckpointWriter();

  AsyncCheckpointWriter(const AsyncCheckpointWriter&) = delete;
  AsyncCheckpointWriter& operator=(const AsyncCheckpointWriter&) = delete;

  // Snapshots `blobs` and queues the save. Returns once the bytes are copied.
  // Errors: InvalidArgument as CheckpointStore::Save (checked here, before
  // copying); ResourceExhausted when the snapshot cannot be allocated; disk
  // errors surface later through Wait()/last_status().
  Status Save(int64_t step, uint32_t world_size, std::span<const BlobRef> blobs);

  // Blocks until nothing is in flight or pending; returns the status of the
  // last finished save (OK when there was none).
  Status Wait();

  // The last finished save: its status, and its figures when it succeeded.
  Status last_status() const;
  std::optional<SaveResult> last_result() const;
  Stats stats() const;

 private:
  struct Snapshot {
    int64_t step = 0;
    uint32_t world_size = 0;
    std::vector<std::string> names;
    std::vector<ByteBuffer> buffers;
    double snapshot_seconds = 0;
  };

  void Run();

  // Constant after construction.
  CheckpointStore* const store_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // signalled on new work, on completion and on shutdown
  // Guarded by mu_.
  std::unique_ptr<Snapshot> pending_;
  bool busy_ = false;
  bool stopping_ = false;
  Status last_status_;
  std::optional<SaveResult> last_result_;
  Stats stats_;

  std::thread thread_;  // started last, in the constructor body
};

}  // namespace ringmaster::checkpoint
