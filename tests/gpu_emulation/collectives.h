// The collectives and point-to-point operations, as one communicator's part of a group launches
// them (enqueue.cc, doLaunches): all its tasks of the group become one item on their stream (the
// "kernel"), which waits for the other streams of the group's tasks to reach the same point and
// holds them until it is done. The item moves the data over the communicator's mesh:
//
//   AllReduce      reduce-scatter then all-gather: rank r reduces chunk r of every input, in rank order
//                  0..n-1, and sends the result to all -- every rank gets the same bits;
//   ReduceScatter  rank r reduces block r of every input, in rank order;
//   Reduce         the root reduces every input, in rank order;
//   AllGather, Broadcast   copies;
//   Send/Recv      sends go out first (the mesh buffers them), receives complete last, so any set of
//                  matching send/recv pairs in a group (an all-to-all) cannot deadlock.
//
// Each item waits for its peers' messages polling the communicator's abort flag: a dead peer makes
// it wait (a hang, as on NVLink/IB) until ncclCommAbort, ncclCommRevoke or an NCCL_SHRINK_ABORT
// raises the flag; then it ends at once (the kernel exits, the stream drains with cudaSuccess) and its
// messages are discarded. Whatever it wrote stays: an AllReduce aborted half way holds, in its own chunk of
// the output, the reduction of the contributions it had folded (NCCL's ring kernels write each step's partial
// sums into the output), so a drained stream proves nothing about the result. The communicator's async
// state is not touched: after a revoke it reads ncclSuccess (init.cc, commRevokeAsync).
//
// Failure knobs: a launch that RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS names faults -- its device's sticky
// error becomes cudaErrorIllegalAddress and the communicator's async state ncclUnhandledCudaError, as NCCL
// reports a CUDA error it finds (checks.h CUDACHECK) -- and moves nothing; a vanished rank's kernels send
// nothing and wait for the abort flag (a peer that stops without a word, as on NVLink/NVLS: no error anywhere).
//
// Thread-safety: LaunchTasks is called by the group's launching thread; the item runs on the stream.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"

namespace gpuemu {

struct CommCore;

enum class Func { kAllReduce, kAllGather, kBroadcast, kReduce, kReduceScatter, kSend, kRecv };

// One operation (ncclInfo): for send/recv, `root` is the peer and `recvbuff` the buffer (as NCCL).
struct Task {
  Func func = Func::kAllReduce;
  const char* op_name = "";
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;
  cudaStream_t stream = nullptr;
  uint64_t seq = 0;  // numbered at launch
  // Failure knobs (settings.h), decided at the enqueue: the comm's async state turns ncclRemoteError as
  // the kernel ends (RINGMASTER_EMULATED_NCCL_ASYNC_ERROR); this rank vanishes (RINGMASTER_EMULATED_NCCL_VANISH).
  bool async_error = false;
  bool vanish = false;
};

// Enqueues a communicator's tasks of one group as one item. ncclUnhandledCudaError when a task's
// stream is not a live stream of the communicator's device (a kernel launch there fails).
ncclResult_t LaunchTasks(const std::shared_ptr<CommCore>& comm, std::vector<Task> tasks);

}  // namespace gpuemu
