// Allreduce through shared memory for the ranks of a communicator that all run
// on one host (several workers or GPUs of one pod, a test machine), in exactly
// the order of additions of Gloo's ring (allreduce_algorithm.h,
// GlooRingChunkBytes), so every result is bit-identical to torch's
// ProcessGroupGloo while no byte crosses a socket.
//
// Over loopback TCP, Gloo's ring copies every byte user -> kernel -> user at
// each of its 2(n-1) steps and wakes a neighbour per segment. Here each rank
// owns a segment with two slots of slot_bytes (double buffering) and, per
// window of the buffer: copies its input window into its slot, waits until all
// have; reduces its 1/n of the window from every rank's slot in one pass
// (ReduceChain, the ring's order for each element's chunk) into its own slot;
// waits until all have; copies every rank's reduced part out. The next use of a
// slot waits until every rank copied out of it. 3 memory passes instead of ~6,
// and 2 synchronisations per window instead of one per ring step.
//
// Synchronisation: each rank's progress counter lives in its own segment; a
// waiter spins briefly, then sleeps on it (a futex on the shared mapping) until
// the owner advances it. Every wait is bounded: it fails with Aborted at the
// collective's timeout, when any peer marked itself failed (MarkFailed, or its
// ShmAllreduce was destroyed), when the peer's process is gone (checked when
// both share a PID namespace), or when `health` (the communicator's Abort
// state) turns non-OK; it looks at the last three every 10 ms of sleep.
//
// Setup (Connect) goes through the rendezvous store: each rank creates its
// segment under a random name, publishes name and nonce, maps everyone else's
// and publishes whether it could; all use shared memory only when all could
// (ranks on other hosts, a full /dev/shm, a sandbox without shm_open: TCP as
// before). Names are unlinked as soon as everyone has voted, so a crash leaks
// nothing.
//
// Errors: Connect: those of the store (Aborted, DeadlineExceeded, Unavailable).
// Run: Aborted (timeout, a failed or dead peer, abort), leaving the object
// unusable (the communicator is broken then anyway).
// Ownership: owns its mappings. Thread-safety: one caller at a time (the
// communicator's calling thread); MarkFailed from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/common/dtype.h"
#include "worker-runtime/gloo/shm_segment.h"
#include "worker-runtime/store/store.h"

namespace ringmaster::gloo {

class ShmAllreduce {
 public:
  // Bytes of one slot for `ranks` ranks: 2 x ranks x this stays <= 32 MiB in /dev/shm.
  static size_t DefaultSlotBytes(int ranks);

  // Collective over the `size` ranks (every rank calls it, with the same slot_bytes, a multiple of 64).
  // Store keys: prefix + "/shm/<rank>" and prefix + "/shm-ok/<rank>". Returns null when not every rank
  // could map every other's segment. Waits for the peers up to `timeout`, and until `health` (polled every
  // 100 ms) is not OK: then fails with its status.
  static StatusOr<std::unique_ptr<ShmAllreduce>> Connect(store::Store& store, const std::string& prefix, int rank,
                                                         int size, size_t slot_bytes, std::chrono::milliseconds timeout,
                                                         const std::function<Status()>& health);
  ~ShmAllreduce();
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  // out = the reduction of every rank's `in` (count elements; in may be out), kAvg as kSum (the caller
  // divides). Every rank calls it with the same count, type and op.
  Status Run(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op,
             std::chrono::milliseconds timeout, const std::function<Status()>& health);

  // Tells the peers that this rank will not go on: their waits on it fail now.
  void MarkFailed();

 private:
  struct Header;
  ShmAllreduce(int rank, int size, size_t slot_bytes, std::vector<std::unique_ptr<ShmSegment>> segments);
  Header* header(int r) const;
  uint8_t* slot(int r, uint64_t window) const;
  void Publish(uint32_t progress);
  // Waits until every other rank's progress is >= target.
  Status WaitAll(uint32_t target, std::chrono::steady_clock::time_point deadline,
                 const std::function<Status()>& health);
  Status WaitFor(int peer, uint32_t target, std::chrono::steady_clock::time_point deadline,
                 const std::function<Status()>& health);

  const int rank_;
  const int size_;
  const size_t slot_bytes_;
  const std::vector<std::unique_ptr<ShmSegment>> segments_;  // segments_[r]: rank r's (this rank's own at rank_)
  uint64_t windows_ = 0;  // windows run so far (progress = 3 x windows_ at rest); calling thread only
};

}  // namespace ringmaster::gloo
