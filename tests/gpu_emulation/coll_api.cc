// The collective and point-to-point entry points (collectives.cc in NCCL) and their checks
// (enqueue.cc ncclEnqueueCheck, argcheck.cc ArgsCheck / CudaPtrCheck).
#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/collectives.h"
#include "tests/gpu_emulation/communicator.h"
#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/group.h"
#include "tests/gpu_emulation/log.h"
#include "tests/gpu_emulation/reduce.h"
#include "tests/gpu_emulation/settings.h"

using namespace gpuemu;

namespace {

// as CudaPtrCheck (argcheck.cc). Real NCCL runs it only under NCCL_CHECK_MODE (a bad pointer
// otherwise faults in the kernel); the emulation always does, and also refuses a buffer shorter
// than the operation reads or writes (an illegal address on a GPU, memory corruption here).
ncclResult_t CudaPtrCheck(const void* ptr, const CommCore& comm, const char* ptrname, const char* opname,
                          size_t bytes) {
  Allocation a;
  if (!Lookup(ptr, &a)) {
    Warn(comm.cuda_dev, "%s : %s %p is not a valid pointer (not device memory from cudaMalloc)", opname, ptrname, ptr);
    return ncclInvalidArgument;
  }
  if (a.device != comm.cuda_dev) {
    Warn(comm.cuda_dev, "%s : %s allocated on device %d mismatchs with NCCL device %d", opname, ptrname, a.device,
         comm.cuda_dev);
    return ncclInvalidArgument;
  }
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr), end = a.base + a.size;
  if (p + bytes > end) {
    Warn(comm.cuda_dev, "%s : %s %p holds %zu bytes from there, the operation needs %zu", opname, ptrname, ptr,
         static_cast<size_t>(p < end ? end - p : 0), bytes);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// as ArgsCheck (argcheck.cc)
ncclResult_t ArgsCheck(const Task& t, const CommCore& comm) {
  if (t.root < 0 || t.root >= comm.nranks) {
    Warn(comm.cuda_dev, "%s : invalid root %d (root should be in the 0..%d range)", t.op_name, t.root, comm.nranks);
    return ncclInvalidArgument;
  }
  if (t.type < 0 || t.type >= ncclNumTypes) {
    Warn(comm.cuda_dev, "%s : invalid type %d", t.op_name, static_cast<int>(t.type));
    return ncclInvalidArgument;
  }
  if (TypeSize(t.type) == 0) {
    Warn(comm.cuda_dev, "%s : data type %d is not supported by the GPU emulation", t.op_name, static_cast<int>(t.type));
    return ncclInvalidArgument;
  }
  if (t.op < 0 || ncclMaxRedOp < t.op) {
    Warn(comm.cuda_dev, "%s : invalid reduction operation %d", t.op_name, static_cast<int>(t.op));
    return ncclInvalidArgument;
  }
  if (ncclNumOps <= t.op) {  // no ncclRedOpCreatePreMulSum in the emulation: no user operation exists
    Warn(comm.cuda_dev, "%s : reduction operation %d unknown to this communicator", t.op_name, static_cast<int>(t.op));
    return ncclInvalidArgument;
  }
  if (t.count == 0) return ncclSuccess;
  const size_t bytes = t.count * TypeSize(t.type), n = static_cast<size_t>(comm.nranks);
  switch (t.func) {
    case Func::kSend:
    case Func::kRecv: return CudaPtrCheck(t.recvbuff, comm, "buff", t.op_name, bytes);
    default: break;
  }
  size_t send_bytes = bytes, recv_bytes = bytes;
  if (t.func == Func::kAllGather) recv_bytes = bytes * n;
  if (t.func == Func::kReduceScatter) send_bytes = bytes * n;
  if (t.func != Func::kBroadcast || comm.rank == t.root) {
    if (ncclResult_t r = CudaPtrCheck(t.sendbuff, comm, "sendbuff", t.op_name, send_bytes); r != ncclSuccess) return r;
  }
  if (t.func != Func::kReduce || comm.rank == t.root) {
    if (ncclResult_t r = CudaPtrCheck(t.recvbuff, comm, "recvbuff", t.op_name, recv_bytes); r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

// as ncclEnqueueCheck (enqueue.cc)
ncclResult_t EnqueueCheck(const Task& t, ncclComm_t comm) {
  ncclResult_t ret = CommCheck(comm, t.op_name, "comm");
  if (ret != ncclSuccess) return GroupErrCheck(ret);
  CommCore& c = *comm->core;
  if (c.revoked.load()) {
    Warn(c.cuda_dev, "%s: communicator was revoked", t.op_name);
    return GroupErrCheck(ncclInvalidUsage);
  }
  GroupStartInternal();
  ret = EnsureReady(c);
  if (ret == ncclSuccess) ret = ArgsCheck(t, c);
  if (ret == ncclSuccess && InjectedFault(t.op_name)) {
    // RINGMASTER_EMULATED_NCCL_FAIL: a failure of the kind taskAppend reports (a proxy connection that
    // could not be set up), found while the call is being enqueued -- inside the caller's group, if any.
    Warn(c.cuda_dev, "%s: injected failure (RINGMASTER_EMULATED_NCCL_FAIL)", t.op_name);
    ret = ncclSystemError;
  }
  if (ret == ncclSuccess) {
    Task task = t;
    task.async_error = InjectedAt("RINGMASTER_EMULATED_NCCL_ASYNC_ERROR", t.op_name);
    task.vanish = InjectedAt("RINGMASTER_EMULATED_NCCL_VANISH", t.op_name);
    GroupAppendTask(comm->core, task);
  } else if (!c.blocking) {
    SetAsyncError(c, ret);
  }
  GroupErrCheck(ret);
  ncclResult_t end = GroupEndInternal();
  if (end != ncclSuccess && end != ncclInProgress) return end;
  // at depth 1 the group just launched: the state may have changed
  if (!c.blocking) ret = GetAsyncError(c);
  return ret;
}

Task MakeTask(Func func, const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
              ncclRedOp_t op, int root, cudaStream_t stream) {
  Task t;
  t.func = func;
  t.op_name = name;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.count = count;
  t.type = type;
  t.op = op;
  t.root = root;
  t.stream = stream;
  return t;
}

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return EnqueueCheck(MakeTask(Func::kAllReduce, "AllReduce", sendbuff, recvbuff, count, datatype, op, 0, stream),
                      comm);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return EnqueueCheck(
      MakeTask(Func::kAllGather, "AllGather", sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, stream), comm);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return EnqueueCheck(
      MakeTask(Func::kBroadcast, "Broadcast", sendbuff, recvbuff, count, datatype, ncclSum, root, stream), comm);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return EnqueueCheck(MakeTask(Func::kReduce, "Reduce", sendbuff, recvbuff, count, datatype, op, root, stream), comm);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return EnqueueCheck(
      MakeTask(Func::kReduceScatter, "ReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, 0, stream), comm);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  // (NCCL keeps a send's buffer in recvbuff and its peer in root)
  return EnqueueCheck(
      MakeTask(Func::kSend, "Send", nullptr, const_cast<void*>(sendbuff), count, datatype, ncclSum, peer, stream),
      comm);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return EnqueueCheck(MakeTask(Func::kRecv, "Recv", nullptr, recvbuff, count, datatype, ncclSum, peer, stream), comm);
}

}  // extern "C"
