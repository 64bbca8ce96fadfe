// The GPU backend: a Communicator over an NCCL communicator and one CUDA
// stream on a chosen device. Buffers are CUDA device pointers of that device.
//
// Every NCCL and CUDA call goes through the process's tables (gpu_api.h): the
// NCCL loaded at run time decides which fault-tolerance calls exist.
//
// NCCL has no collective timeout, so every NCCL communicator here is
// non-blocking (config.blocking = 0) and every call is followed by a poll of
// cudaStreamQuery and ncclCommGetAsyncError against our own deadline. On an
// asynchronous error, a deadline, or Abort(), the polling thread revokes the
// communicator when the loaded NCCL has ncclCommRevoke (>= 2.28.7: in-flight
// work stops and the communicator stays shrinkable; Revoke answers
// ncclInProgress until quiescent), else aborts it (ncclCommAbort; never
// ncclCommDestroy on a failed communicator), and the communicator answers
// Aborted from then on. Never inside an open NCCL group: a grouped call that
// fails first closes the group (a Revoke queued in an open group would run
// only at its end).
//
// Non-blocking management calls (Split, Shrink) return ncclInProgress and
// NCCL writes the child's handle later, from its own thread: the out-pointer
// lives on the heap, owned by this communicator until NCCL is done with it,
// and is read only once the parent's ncclCommGetAsyncError leaves
// ncclInProgress (init.cc, ncclCommInitChildComm / ncclCommInitRankFunc).
//
// CUDA's current device is per thread: every method sets this communicator's
// device for its duration (and restores the caller's), so a collective, a
// split or a scratch allocation on another thread acts on the right GPU.
//
// A collective returns OK only when its work is complete: a drained stream is
// not enough (an aborted kernel leaves it idle with partial results), so the
// async error, a revoke and an Abort() request are checked after it drains.
// health() also reports an async error that arrives after a collective.
//
// Teardown: a communicator whose generation ended in order (healthy, never
// revoked or aborted) is finalized (ncclCommFinalize, polled for at most the
// timeout) and destroyed; any other, or one whose finalize fails or times out,
// is aborted (Destroy runs Finalize, which hangs when a peer is gone).
//
// Thread-safety: as Communicator. Abort() only sets a flag; the thread inside
// the communicator revokes or aborts it, so NCCL is never entered by two
// threads at once (health() asks NCCL only while no thread is inside).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/comm/device_traffic.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/store/store.h"

struct ncclComm;
struct CUstream_st;

namespace ringmaster::nccl {

struct NcclOptions {
  int device = 0;                            // CUDA device of this rank
  std::chrono::milliseconds timeout{60000};  // init and per collective
  // Where each successful collective's payload is counted under `device` (see DeviceTraffic); shared with
  // the communicators split or shrunk from this one. May be null: nothing is counted.
  std::shared_ptr<comm::DeviceTraffic> traffic;
};

class NcclCommunicator : public comm::Communicator {
 public:
  // Errors: Aborted (init failed or timed out; the half-built communicator
  // is aborted), Unavailable (no GPU / CUDA error), as Store::Get; and what no rebuild repairs (gpu_errors.h):
  // FailedPrecondition (NCCL refused the configuration: ncclInvalidUsage, e.g. two ranks on one GPU),
  // InvalidArgument (ncclInvalidArgument, cudaErrorInvalidDevice), DataLoss (ncclUnhandledCudaError, a sticky
  // CUDA error). After init, a sticky CUDA error or ncclUnhandledCudaError in any call is DataLoss naming the
  // GPU (and health() says so from then on); every other failure is Aborted.
  static StatusOr<std::unique_ptr<comm::Communicator>> Create(std::shared_ptr<store::Store> store, std::string prefix,
                                                              int rank, int size, NcclOptions options);
  ~NcclCommunicator() override;

  // Growing a communicator in place (ncclCommGrow, NCCL >= 2.29.2): the existing ranks keep their
  // numbers and newcomers take the ranks from size() to new_size - 1; no full init of the survivors.
  // Collective over every existing rank (Grow) and every newcomer (JoinGrown), all with the same
  // `prefix` (the store key of the grow's unique id, made by existing rank 0) and `new_size`.
  // Must not run concurrently with another call on this communicator.
  // Errors: Unimplemented (this NCCL has no ncclCommGrow: build a new communicator),
  // InvalidArgument (new_size <= size()), FailedPrecondition (broken), Aborted (failed or timed out).
  StatusOr<std::unique_ptr<comm::Communicator>> Grow(store::Store& store, const std::string& prefix, int new_size);
  static StatusOr<std::unique_ptr<comm::Communicator>> JoinGrown(std::shared_ptr<store::Store> store,
                                                                 std::string prefix, int rank, int new_size,
                                                                 NcclOptions options);
  // Whether Grow can work (the loaded NCCL has it and this communicator is healthy).
  bool can_grow() const;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  comm::Backend backend() const override { return comm::Backend::kNccl; }
  comm::MemoryKind memory() const override { return comm::MemoryKind::kCuda; }

  bool can_shrink() const override;
  void Abort(const std::string& reason) override;
  Status health() const override;

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override;
  Status DoAllgather(const void* in, void* out, size_t count, common::DataType type) override;
  Status DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts, common::DataType type) override;
  Status DoBroadcast(const void* in, void* out, size_t count, common::DataType type, int root) override;
  Status DoReduceScatter(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override;
  // In place (in == out): `in` is first copied to a scratch buffer on the stream.
  Status DoAlltoall(const void* in, void* out, size_t count, common::DataType type) override;
  Status DoBarrier() override;
  // The stream of the collectives waits for the fence on the device (cudaStreamWaitEvent): the host does not.
  Status DoOrderAfter(comm::ReadyFence& fence) override;
  StatusOr<std::unique_ptr<comm::Communicator>> DoSplit(const std::vector<int>& ranks,
                                                        const std::string& name) override;
  StatusOr<std::unique_ptr<comm::Communicator>> DoShrink(const std::vector<int>& excluded,
                                                         const std::string& name) override;

 private:
  NcclCommunicator(const nccl::CudaApi& cuda, const nccl::NcclApi& nccl, std::string prefix, int rank, int size,
                   NcclOptions options, ncclComm* comm, CUstream_st* stream);
  // The child of a Split or Shrink whose call returned: waits (until the deadline) for the parent to
  // leave ncclInProgress, then reads the handle NCCL wrote into `slot`. nullptr when NCCL made no
  // child (a Split's NOCOLOR rank). On a failure or timeout (or, when `abortable`, an Abort() request)
  // the parent is aborted, which stops the child's init, and `slot` stays with this communicator
  // (NCCL may still write it). A Shrink is not abortable: it runs, by design, after Abort(). Errors: Aborted.
  StatusOr<ncclComm*> AwaitChild(std::unique_ptr<ncclComm*> slot, const char* what, bool abortable);
  // A child communicator once NCCL has created it: checks it, adds a stream on our device.
  StatusOr<std::unique_ptr<comm::Communicator>> Adopt(ncclComm* child, std::string prefix, int rank, int size,
                                                      const char* what);
  // Runs `call` with this communicator's device current on the calling thread.
  template <typename Fn>
  auto OnDevice(Fn call) -> decltype(call());
  // Polls until the communicator is idle (init/split done) or the deadline.
  Status WaitComm(const char* what);
  // Polls until the stream has drained every enqueued operation, then Drained().
  Status WaitStream(const char* what);
  // "Complete means complete": OK only when the drained stream's work really completed -- no async error, no
  // revoke in progress, no Abort() request, never revoked or aborted (an aborted kernel leaves the stream
  // idle with partial results). Errors: Aborted (the communicator is failed).
  Status Drained(const char* what);
  // ncclGetErrorString's text; for ncclUnhandledCudaError also the CUDA error behind it, by name.
  std::string NcclError(int result) const;
  // The destructor's choice. Orderly: healthy, never revoked/aborted/asked to abort, no async error (mu_ held).
  bool Orderly() const;
  // ncclCommFinalize polled to completion (at most options_.timeout), then ncclCommDestroy; false (nothing
  // released: the caller aborts) when Finalize fails or times out (mu_ held).
  bool Finalized();
  // The allreduce itself, not counted (DoBarrier's word is no payload).
  Status AllreduceOnStream(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op);
  // InvalidArgument (the communicator stays usable) when a buffer is host memory or another GPU's: NCCL
  // would refuse it too (argcheck.cc, CudaPtrCheck), in words a user can act on. Nulls are skipped.
  Status CheckBuffers(std::initializer_list<std::pair<const void*, const char*>> buffers) const;
  // `done`; when it is OK, `bytes` are added to options_.traffic.
  Status Counted(Status done, size_t bytes);
  // Checks an NCCL return code of an enqueue call; failures revoke or abort (Fail).
  Status Check(int result, const char* what);
  // Runs `enqueue` (ncclSend/ncclRecv/... calls that report through `check`) inside one NCCL group,
  // always closes the group, and only then fails on the first error.
  Status Grouped(const std::function<void(const std::function<void(int, const char*)>& check)>& enqueue);
  // Marks the communicator broken with `code` (gpu_errors.h: Aborted, or DataLoss for a sticky CUDA error,
  // which also replaces an earlier Aborted) and revokes (or aborts) it. Never call it inside an open group.
  Status Fail(const std::string& why, StatusCode code = StatusCode::kAborted);
  // Device memory of at least `bytes`, kept and grown for later calls. Errors: Unavailable.
  StatusOr<void*> Scratch(size_t bytes);

  // Constant after construction.
  const std::string prefix_;
  const int rank_;
  const int size_;
  const NcclOptions options_;
  const nccl::CudaApi& cuda_;
  const nccl::NcclApi& nccl_;  // the libnccl in use: which fault-tolerance calls exist
  ncclComm* const comm_;
  CUstream_st* const stream_;

  std::atomic<bool> abort_requested_{false};
  // Held by the thread inside NCCL (OnDevice) and tried by health(), so that health() asks NCCL for an
  // async error only while no other thread is inside the communicator. Taken before mu_.
  mutable std::mutex call_mu_;
  mutable std::mutex mu_;
  // Guarded by mu_. Mutable: health() records an async error it finds.
  mutable Status broken_;
  bool nccl_aborted_ = false;  // ncclCommAbort done: the resources are gone
  bool revoked_ = false;       // ncclCommRevoke done: quiescing or quiescent, shrinkable

  // Used by the calling thread only.
  void* scratch_ = nullptr;  // device memory for Barrier and in-place Alltoall
  size_t scratch_bytes_ = 0;
  // Out-pointers of Split/Shrink calls NCCL may still write (the wait for them failed); freed, and
  // any child written into them aborted, once comm_ is aborted in the destructor.
  std::vector<std::unique_ptr<ncclComm*>> abandoned_children_;
};

}  // namespace ringmaster::nccl
