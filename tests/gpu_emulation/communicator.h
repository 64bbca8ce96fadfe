// The state of one rank of a communicator (NCCL's struct ncclComm, comm.h): who it is, its state
// machine (initState, asyncResult, abortFlag, revokedFlag, destroyFlag, finalizeCalled), its mesh,
// and the bookkeeping of the work it has queued on streams.
//
// The handle users hold (ncclComm_t) owns a shared CommCore; the work queued on streams and the
// group jobs share it too, so a stream item that starts after the communicator was aborted finds
// live memory (and skips: its epoch is stale).
//
// Thread-safety: the flags and states are atomics; the fields under `mu` and `ops_mu` are guarded
// by them; identity fields are written by the init job before it publishes the state, read after.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/bootstrap.h"
#include "tests/gpu_emulation/mesh.h"
#include "tests/gpu_emulation/net.h"

namespace gpuemu {

struct GroupJob;

struct CommCore {
  // identity
  int rank = -1;
  int nranks = 0;
  int cuda_dev = -1;
  int phys_dev = -1;
  uint64_t id = 0;  // commHash: from the unique id, or the parent's id and the split/shrink/grow
  bool blocking = true;

  // the state machine
  std::shared_ptr<Flag> abort_flag = std::make_shared<Flag>(0);
  std::atomic<int> async_result{ncclSuccess};
  std::atomic<int> init_state{ncclInProgress};
  std::atomic<bool> revoked{false};
  std::atomic<bool> destroy_flag{false};
  std::atomic<bool> finalize_called{false};
  std::atomic<bool> vanished{false};  // RINGMASTER_EMULATED_NCCL_VANISH: its kernels wait, moving nothing

  std::mutex mu;
  std::shared_ptr<Mesh> mesh;                         // set by the init job
  std::shared_ptr<BootstrapRoot> root;                // this process's root its init used
  std::shared_ptr<Flag> child_abort_flag;             // a child's, while its init job runs
  std::vector<std::shared_ptr<GroupJob>> group_jobs;  // non-blocking group jobs not yet joined
  uint64_t coll_seq = 0;
  std::vector<uint64_t> send_seq, recv_seq;  // per peer
  int child_count = 0;                       // splits and grows (init.cc: comm->childCount)
  int shrink_count = 0;                      // shrinks (each child's id differs)

  std::shared_ptr<Mesh> GetMesh();

  // as setCommAbortFlags (init.cc): this communicator's flag and its child's (while a child is
  // being made); raising them also makes every queued stream item of this communicator stale.
  void SetAbortFlags(uint32_t value);
  bool Aborted() const { return abort_flag->load() != 0; }

  // Work on streams: OpQueued when a batch is enqueued (with the epoch it belongs to); BeginOp when
  // it starts (false: it is stale and skips); EndOp when it ends.
  uint64_t Epoch();
  void OpQueued();
  bool BeginOp(uint64_t epoch);
  void EndOp(bool ran);
  // Waits until nothing of this communicator runs on a stream (ncclStrongStreamSynchronize after
  // an abort: the running kernels exit) / until nothing is queued either (a healthy teardown).
  void WaitRunning();
  void WaitPending();

 private:
  std::mutex ops_mu_;
  std::condition_variable ops_cv_;
  uint64_t epoch_ = 0;
  int running_ = 0;
  int pending_ = 0;
};

// as ncclCommSetAsyncError / ncclCommGetAsyncError (init.cc). GetAsyncError also joins the group
// jobs of this communicator that have finished once its state is ncclSuccess.
void SetAsyncError(CommCore& comm, ncclResult_t state);
ncclResult_t GetAsyncError(CommCore& comm);
// as ncclCommEnsureReady (init.cc).
ncclResult_t EnsureReady(CommCore& comm);

// as PtrCheck (argcheck.cc).
ncclResult_t PtrCheck(const void* ptr, const char* opname, const char* ptrname);

}  // namespace gpuemu

// The handle (opaque in nccl.h).
struct ncclComm {
  static constexpr uint64_t kMagic = 0x0280028002800280ull;  // NCCL_MAGIC
  uint64_t start_magic = kMagic;
  std::shared_ptr<gpuemu::CommCore> core;
  uint64_t end_magic = kMagic;
};

namespace gpuemu {
// as CommCheck (argcheck.cc): a null or corrupted handle is ncclInvalidArgument.
ncclResult_t CommCheck(const ncclComm* comm, const char* opname, const char* ptrname);
ncclComm* NewComm(std::shared_ptr<CommCore> core);
void FreeComm(ncclComm* comm);  // poisons the magic (as commPoison) and frees the handle
}  // namespace gpuemu
