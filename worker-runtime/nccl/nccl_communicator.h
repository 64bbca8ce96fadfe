// The GPU backend: a Communicator over an NCCL communicator and one CUDA
// stream on a chosen device. Buffers are CUDA device pointers.
//
// NCCL has no collective timeout, so every NCCL communicator here is
// non-blocking (config.blocking = 0) and every call is followed by a poll of
// cudaStreamQuery and ncclCommGetAsyncError against our own deadline. On an
// asynchronous error, a deadline, or Abort(), the polling thread calls
// ncclCommRevoke when the loaded NCCL has it (>= 2.28: in-flight work stops and
// the communicator stays shrinkable), else ncclCommAbort (never ncclCommDestroy
// on a failed communicator), and the communicator answers Aborted from then on.
// Init uses ncclCommInitRankConfig with the unique id carried by the rendezvous
// store; Split uses ncclCommSplit; Shrink (NCCL >= 2.27) uses ncclCommShrink --
// after a revoke once the parent is quiescent, otherwise in NCCL_SHRINK_ABORT
// mode -- so a scale-down or a lost peer needs no new unique id and no full init.
//
// Thread-safety: as Communicator. Abort() only sets a flag; the thread inside
// the communicator performs ncclCommAbort, so NCCL is never entered by two
// threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "comm/communicator.h"
#include "comm/device_traffic.h"
#include "nccl/nccl_version.h"
#include "store/store.h"

struct ncclComm;
struct CUstream_st;

namespace ringmaster::runtime {

struct NcclOptions {
  int device = 0;                            // CUDA device of this rank
  std::chrono::milliseconds timeout{60000};  // init and per collective
  // Where each successful collective's payload is counted under `device` (see DeviceTraffic); shared with
  // the communicators split or shrunk from this one. May be null: nothing is counted.
  std::shared_ptr<DeviceTraffic> traffic;
};

class NcclCommunicator : public Communicator {
 public:
  // Errors: Aborted (init failed or timed out; the half-built communicator
  // is aborted), Unavailable (no GPU / CUDA error), as Store::Get.
  static StatusOr<std::unique_ptr<Communicator>> Create(std::shared_ptr<Store> store, std::string prefix, int rank,
                                                        int size, NcclOptions options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::kNccl; }
  MemoryKind memory() const override { return MemoryKind::kCuda; }

  bool can_shrink() const override;
  void Abort(const std::string& reason) override;
  Status health() const override;

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  Status DoAllgather(const void* in, void* out, size_t count, DataType type) override;
  Status DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType type) override;
  Status DoBroadcast(const void* in, void* out, size_t count, DataType type, int root) override;
  Status DoReduceScatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  // In place (in == out): `in` is first copied to a scratch buffer on the stream.
  Status DoAlltoall(const void* in, void* out, size_t count, DataType type) override;
  Status DoBarrier() override;
  StatusOr<std::unique_ptr<Communicator>> DoSplit(const std::vector<int>& ranks, const std::string& name) override;
  StatusOr<std::unique_ptr<Communicator>> DoShrink(const std::vector<int>& excluded, const std::string& name) override;

 private:
  NcclCommunicator(std::string prefix, int rank, int size, NcclOptions options, nccl::Version loaded, ncclComm* comm,
                   CUstream_st* stream);
  // A child communicator (split or shrink) once NCCL has created it: waits for it, adds a stream.
  StatusOr<std::unique_ptr<Communicator>> Adopt(ncclComm* child, std::string prefix, int rank, int size,
                                                const char* what);
  // Polls until the communicator is idle (init/split done) or the deadline.
  Status WaitComm(const char* what);
  // Polls until the stream has drained every enqueued operation.
  Status WaitStream(const char* what);
  // The allreduce itself, not counted (DoBarrier's word is no payload).
  Status AllreduceOnStream(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // `done`; when it is OK, `bytes` are added to options_.traffic.
  Status Counted(Status done, size_t bytes);
  // Checks an NCCL return code of an enqueue call; failures abort.
  Status Check(int result, const char* what);
  Status Fail(const std::string& why);
  // Device memory of at least `bytes`, kept and grown for later calls. Errors: Unavailable.
  StatusOr<void*> Scratch(size_t bytes);

  // Constant after construction.
  const std::string prefix_;
  const int rank_;
  const int size_;
  const NcclOptions options_;
  const nccl::Version loaded_;  // the libnccl in use: which fault-tolerance calls exist
  ncclComm* const comm_;
  CUstream_st* const stream_;

  std::atomic<bool> abort_requested_{false};
  mutable std::mutex mu_;
  // Guarded by mu_.
  Status broken_;
  bool nccl_aborted_ = false;  // ncclCommAbort done: the resources are gone
  bool revoked_ = false;       // ncclCommRevoke done: quiescing or quiescent, shrinkable

  // Used by the calling thread only.
  void* scratch_ = nullptr;  // device memory for Barrier and in-place Alltoall
  size_t scratch_bytes_ = 0;
};

}  // namespace ringmaster::runtime
