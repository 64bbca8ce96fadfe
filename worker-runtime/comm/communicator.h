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
// background thread); Abort() may be called from any thread, and so may the
// point-to-point calls PostSend/PostRecv (they run beside the collectives).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/common/dtype.h"

namespace ringmaster::comm {

enum class Backend { kAuto, kGloo, kNccl };
std::string_view BackendName(Backend backend);  // "auto", "gloo", "nccl"
StatusOr<Backend> ParseBackend(std::string_view name);

enum class MemoryKind { kHost, kCuda };

// A point-to-point send or receive in flight (Communicator::PostSend/PostRecv).
// Owns what it needs from the communicator, so it may outlive it. Wait() from
// one thread at a time.
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Blocks until the buffer may be reused (send) or holds the data (receive).
  // Errors: Aborted (the peer died, the communicator was aborted or the
  // communicator's timeout passed); later calls return the same status.
  virtual Status Wait() = 0;
};

// A point in another stream of device work that a collective's input depends on: a CUDA event the framework
// recorded on its current stream after the kernels that produce the input (fusion::Request::ready). A
// communicator whose collectives run on a stream of their own (NCCL) makes that stream wait for it on the device,
// so the framework's thread never blocks for its own kernels (DDP's bucket hooks would otherwise stall the
// backward pass at every bucket); any other waits on the host.
// Thread-safety: safe from any thread; the device work it names must not be recorded again.
class ReadyFence {
 public:
  virtual ~ReadyFence() = default;
  // Blocks the calling thread until the work before the fence has finished. Errors: Unavailable (the device's).
  virtual Status Wait() = 0;
  // Makes `stream` (a cudaStream_t) wait on the device for the work before the fence, without blocking the host.
  // Errors: Unavailable (the device's).
  virtual Status OrderStream(void* stream) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Backend backend() const = 0;
  virtual MemoryKind memory() const = 0;

  // The collectives. Each public method checks its arguments the same way for
  // every backend, then its health (Aborted once broken), returns OK at once
  // when there is nothing to move (a zero count everywhere), and only then
  // calls the backend's Do* method. InvalidArgument (the communicator stays
  // usable) for: a null buffer where elements are to be read or written; an
  // unknown DataType or ReduceOp; a root outside [0, size()); counts.size() !=
  // size(); a byte size that overflows size_t; buffers that overlap other than
  // in the in-place form stated below. Buffers of any other two calls may
  // overlap freely; within one call, `in` and `out` are either disjoint or
  // exactly the in-place form.

  // out = op over ranks of in (count elements). In-place: in == out.
  // kAvg divides the sum by size().
  Status Allreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op);
  // out (size()*count elements) = concatenation of every rank's in (count elements).
  // In-place: in == out + rank()*count elements (this rank's block of out already holds its input).
  Status Allgather(const void* in, void* out, size_t count, common::DataType type);
  // Like Allgather with per-rank counts (counts.size() == size()): in holds counts[rank()]
  // elements, out the sum of counts. In-place: in == out + (sum of counts below rank()) elements.
  Status Allgatherv(const void* in, void* out, const std::vector<size_t>& counts, common::DataType type);
  // out = root's in, count elements. Non-roots' in is ignored (may be null).
  // In-place: in == out (on the root; elsewhere out is simply overwritten).
  Status Broadcast(const void* in, void* out, size_t count, common::DataType type, int root);
  // in has size()*count elements; out (count elements) = op over ranks of in's block rank().
  // In-place: in == out, and the result lands in the first count elements.
  Status ReduceScatter(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op);
  // in and out have size()*count elements; block j of in goes to rank j, block i of out
  // came from rank i. In-place: in == out.
  Status Alltoall(const void* in, void* out, size_t count, common::DataType type);
  // Errors: Aborted only.
  Status Barrier();

  // Creates the communicator of a subset of this one's ranks (a process set).
  // Collective over ALL ranks of this communicator, called with the same
  // `ranks` (sorted, unique, ranks of this communicator) and `name` everywhere.
  // Returns nullptr on ranks outside `ranks`. Errors: InvalidArgument, Aborted.
  StatusOr<std::unique_ptr<Communicator>> Split(const std::vector<int>& ranks, const std::string& name);

  // Point-to-point, not collective: this rank and `peer` (another rank of this
  // communicator) alone. PostSend queues `bytes` bytes of `buf` for `peer`,
  // PostRecv posts `buf` for `bytes` bytes from `peer`; both return at once and
  // the Transfer's Wait() completes them. Sends and receives between two ranks
  // with the same `tag` match in the order they were posted; the sizes must
  // agree. `buf` must stay valid until Wait() returns. Unlike the collectives,
  // these may be called from any thread, beside a collective in progress.
  // Errors: InvalidArgument (peer out of range or this rank, null buffer),
  // Unimplemented (the backend has no point-to-point: Gloo has, NCCL's
  // communicator here not -- stage through host memory), Aborted.
  StatusOr<std::unique_ptr<Transfer>> PostSend(const void* buf, size_t bytes, int peer, uint32_t tag);
  StatusOr<std::unique_ptr<Transfer>> PostRecv(void* buf, size_t bytes, int peer, uint32_t tag);

  // Whether Shrink can work now (the backend supports it and the communicator's
  // resources are still held). Safe from any thread.
  virtual bool can_shrink() const { return false; }
  // The communicator of the survivors when the ranks in `excluded` (sorted,
  // unique ranks of this one, not this rank) are gone: survivors keep their
  // relative order (new rank = old rank minus the excluded ranks below it).
  // Called by the survivors only, with the same `excluded` and `name`, and also
  // -- that is the point -- on a communicator that was aborted by a failure or
  // by Abort(). Must not run concurrently with another call on this communicator.
  // Errors: InvalidArgument (bad `excluded`), Unimplemented (the backend cannot
  // shrink: build a new communicator), FailedPrecondition (its resources are
  // already released: build a new one), Aborted (the shrink failed or timed out).
  StatusOr<std::unique_ptr<Communicator>> Shrink(const std::vector<int>& excluded, const std::string& name);

  // Orders this communicator's next collective after `fence` (ReadyFence): on the device where its collectives
  // run on a stream of their own (NCCL), else by waiting on this thread. Called by the collectives' one calling
  // thread, right before the collective. Errors: the fence's (the collective must then not run), Aborted.
  Status OrderAfter(ReadyFence& fence);

  // Makes the communicator unusable and unblocks nothing-in-flight; every later
  // call returns Aborted. Idempotent. Safe from any thread.
  virtual void Abort(const std::string& reason) = 0;
  // OK while usable, otherwise the Aborted status that broke it.
  virtual Status health() const = 0;

 protected:
  // The backends' part: called only with checked arguments (as documented on
  // the public method, a non-zero amount of data, the communicator healthy
  // when the call began), from the one calling thread. Errors: Aborted.
  virtual Status DoAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) = 0;
  virtual Status DoAllgather(const void* in, void* out, size_t count, common::DataType type) = 0;
  virtual Status DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts, common::DataType type) = 0;
  virtual Status DoBroadcast(const void* in, void* out, size_t count, common::DataType type, int root) = 0;
  virtual Status DoReduceScatter(const void* in, void* out, size_t count, common::DataType type,
                                 common::ReduceOp op) = 0;
  virtual Status DoAlltoall(const void* in, void* out, size_t count, common::DataType type) = 0;
  virtual Status DoBarrier() = 0;
  virtual StatusOr<std::unique_ptr<Communicator>> DoSplit(const std::vector<int>& ranks, const std::string& name) = 0;
  // Checked arguments, bytes > 0; may run on any thread. Default: Unimplemented.
  virtual StatusOr<std::unique_ptr<Transfer>> DoPostSend(const void* buf, size_t bytes, int peer, uint32_t tag);
  virtual StatusOr<std::unique_ptr<Transfer>> DoPostRecv(void* buf, size_t bytes, int peer, uint32_t tag);
  // Default: fence.Wait() (the host waits).
  virtual Status DoOrderAfter(ReadyFence& fence) { return fence.Wait(); }
  // Default: Unimplemented.
  virtual StatusOr<std::unique_ptr<Communicator>> DoShrink(const std::vector<int>& excluded, const std::string& name);
};

}  // namespace ringmaster::comm
