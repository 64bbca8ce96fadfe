// A communicator: a fixed group of ranks that run collectives together. Two
// backends implement it: Gloo over TCP for host memory, NCCL for CUDA memory
// (see memory()). Buffers are contiguous arrays of `count` elements.
//
// Calls are collective: every rank of the communicator must make the same
// calls in the same order with matching counts and types.
//
// Errors (every collective):
//   InvalidArgument   bad count/root/buffer sizes; the communicator stays usable.
//   Aborted           a peer died, a timeout fired or Abort() was called. The
//                     communicator is now unusable: every later call returns
//                     Aborted until it is rebuilt (a new one is created).
//
// Thread-safety: a communicator is used by one thread at a time (the runtime's
// background thread); Abort() may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "common/dtype.h"

namespace ringmaster::runtime {

enum class Backend { kAuto, kGloo, kNccl };
std::string_view BackendName(Backend backend);  // "auto", "gloo", "nccl"
StatusOr<Backend> ParseBackend(std::string_view name);

enum class MemoryKind { kHost, kCuda };

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Backend backend() const = 0;
  virtual MemoryKind memory() const = 0;

  // out = op over ranks of in. in == out is in-place. kAvg divides the sum by size().
  virtual Status Allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) = 0;
  // out (size()*count elements) = concatenation of every rank's in (count elements).
  virtual Status Allgather(const void* in, void* out, size_t count, DataType type) = 0;
  // Like Allgather with per-rank counts; counts.size() == size(), counts[rank()] elements in `in`.
  virtual Status Allgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType type) = 0;
  // out = root's in, count elements; in == out is in-place (non-roots' in is ignored).
  virtual Status Broadcast(const void* in, void* out, size_t count, DataType type, int root) = 0;
  // in has size()*count elements; out (count elements) = op over ranks of in's block rank().
  // in == out is in-place: the result lands in the first count elements.
  virtual Status ReduceScatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) = 0;
  // in and out have size()*count elements; block j of in goes to rank j, block i of out came from rank i.
  virtual Status Alltoall(const void* in, void* out, size_t count, DataType type) = 0;
  virtual Status Barrier() = 0;

  // Creates the communicator of a subset of this one's ranks (a process set).
  // Collective over ALL ranks of this communicator, called with the same
  // `ranks` (sorted, unique, ranks of this communicator) and `name` everywhere.
  // Returns nullptr on ranks outside `ranks`. Errors: InvalidArgument, Aborted.
  virtual StatusOr<std::unique_ptr<Communicator>> Split(const std::vector<int>& ranks, const std::string& name) = 0;

  // Whether Shrink can work now (the backend supports it and the communicator's
  // resources are still held). Safe from any thread.
  virtual bool can_shrink() const { return false; }
  // The communicator of the survivors when the ranks in `excluded` (sorted,
  // unique ranks of this one) are gone: survivors keep their relative order
  // (new rank = old rank minus the excluded ranks below it). Called by the
  // survivors only, with the same `excluded` and `name`, and also -- that is the
  // point -- on a communicator that was aborted by a failure or by Abort().
  // Must not run concurrently with another call on this communicator.
  // Errors: Unimplemented (the backend cannot shrink: build a new communicator),
  // FailedPrecondition (its resources are already released: build a new one),
  // InvalidArgument (bad `excluded`), Aborted (the shrink failed or timed out).
  virtual StatusOr<std::unique_ptr<Communicator>> Shrink(const std::vector<int>& excluded, const std::string& name);

  // Makes the communicator unusable and unblocks nothing-in-flight; every later
  // call returns Aborted. Idempotent. Safe from any thread.
  virtual void Abort(const std::string& reason) = 0;
  // OK while usable, otherwise the Aborted status that broke it.
  virtual Status health() const = 0;
};

}  // namespace ringmaster::runtime
