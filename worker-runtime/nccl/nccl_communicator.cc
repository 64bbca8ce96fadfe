#include "nccl/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <numeric>
#include <thread>

#include "comm/validate.h"

namespace ringmaster::runtime {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t ToNccl(DataType t) {
  switch (t) {
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kUInt8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAvg: return ncclAvg;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
  }
  return ncclSum;
}

std::string CudaError(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

const uint8_t* At(const void* p, size_t elements, DataType t) {
  return static_cast<const uint8_t*>(p) + elements * DataTypeSize(t);
}
uint8_t* At(void* p, size_t elements, DataType t) { return static_cast<uint8_t*>(p) + elements * DataTypeSize(t); }

// Polls a non-blocking communicator until it leaves ncclInProgress.
ncclResult_t PollComm(ncclComm_t comm, Clock::time_point deadline, const std::atomic<bool>* abort_requested) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() > deadline || (abort_requested && abort_requested->load())) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::Create(std::shared_ptr<Store> store, std::string prefix,
                                                                 int rank, int size, NcclOptions options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " of size " + std::to_string(size));
  }
  if (cudaError_t e = cudaSetDevice(options.device); e != cudaSuccess) {
    return UnavailableError("cudaSetDevice(" + std::to_string(options.device) + "): " + CudaError(e));
  }
  ncclUniqueId id;
  const std::string key = prefix + "/nccl-unique-id";
  if (rank == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      return UnavailableError(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
    }
    RINGMASTER_RETURN_IF_ERROR(store->Set(key, std::string(id.internal, sizeof id.internal)));
  } else {
    RINGMASTER_ASSIGN_OR_RETURN(std::string v, store->Get(key, options.timeout));
    if (v.size() != sizeof id.internal) return InternalError("malformed NCCL unique id in the store");
    std::memcpy(id.internal, v.data(), sizeof id.internal);
  }
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return UnavailableError("cudaStreamCreate: " + CudaError(e));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (r == ncclInProgress || r == ncclSuccess) {
    r = comm ? PollComm(comm, Clock::now() + options.timeout, nullptr) : r;
  }
  if (r != ncclSuccess) {
    if (comm) ncclCommAbort(comm);
    cudaStreamDestroy(stream);
    return AbortedError("NCCL init of '" + prefix + "' (rank " + std::to_string(rank) + " of " + std::to_string(size) +
                        ") " + (r == ncclInProgress ? "timed out" : std::string("failed: ") + ncclGetErrorString(r)));
  }
  auto loaded = nccl::LoadedVersion();
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(prefix), rank, size, options,
                                                            loaded.ok() ? *loaded : nccl::Version{}, comm, stream));
}

NcclCommunicator::NcclCommunicator(std::string prefix, int rank, int size, NcclOptions options, nccl::Version loaded,
                                   ncclComm* comm, CUstream_st* stream)
    : prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      options_(options),
      loaded_(loaded),
      comm_(comm),
      stream_(stream) {}

NcclCommunicator::~NcclCommunicator() {
  // Abort rather than Destroy: Destroy runs Finalize, a collective that hangs if a peer is gone.
  std::lock_guard<std::mutex> lock(mu_);
  if (!nccl_aborted_) ncclCommAbort(comm_);
  if (scratch_) cudaFree(scratch_);
  cudaStreamDestroy(stream_);
}

void NcclCommunicator::Abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.ok()) broken_ = AbortedError("communicator '" + prefix_ + "' aborted: " + reason);
  }
  abort_requested_ = true;  // the thread inside NCCL, if any, aborts it
}

Status NcclCommunicator::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

Status NcclCommunicator::Fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = AbortedError("communicator '" + prefix_ + "' rank " + std::to_string(rank_) + ": " + why);
  if (nccl_aborted_ || revoked_) return broken_;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  // Revoke stops the in-flight work like an abort but keeps the communicator, so the survivors
  // can shrink it instead of building a new one.
  if (loaded_.HasCommRevoke() && ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT) == ncclSuccess) {
    revoked_ = true;
    return broken_;
  }
#endif
  ncclCommAbort(comm_);
  nccl_aborted_ = true;
  return broken_;
}

Status NcclCommunicator::Check(int result, const char* what) {
  auto r = static_cast<ncclResult_t>(result);
  if (r == ncclSuccess || r == ncclInProgress) return Status::Ok();
  return Fail(std::string(what) + ": " + ncclGetErrorString(r));
}

Status NcclCommunicator::WaitComm(const char* what) {
  ncclResult_t r = PollComm(comm_, Clock::now() + options_.timeout, &abort_requested_);
  if (r == ncclSuccess) return Status::Ok();
  if (abort_requested_) return Fail(std::string(what) + ": aborted on request");
  return Fail(std::string(what) + (r == ncclInProgress ? ": timed out" : std::string(": ") + ncclGetErrorString(r)));
}

Status NcclCommunicator::WaitStream(const char* what) {
  RINGMASTER_RETURN_IF_ERROR(WaitComm(what));  // enqueue finished (non-blocking mode)
  const auto deadline = Clock::now() + options_.timeout;
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return Status::Ok();
    if (e != cudaErrorNotReady) return Fail(std::string(what) + ": " + CudaError(e));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      return Fail(std::string(what) + ": " + ncclGetErrorString(async));
    }
    if (abort_requested_) return Fail(std::string(what) + ": aborted on request");
    if (Clock::now() > deadline) {
      return Fail(std::string(what) + ": timed out after " + std::to_string(options_.timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Status NcclCommunicator::Counted(Status done, size_t bytes) {
  if (done.ok() && options_.traffic) options_.traffic->Add(options_.device, bytes);
  return done;
}

Status NcclCommunicator::AllreduceOnStream(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  RINGMASTER_RETURN_IF_ERROR(
      Check(ncclAllReduce(in, out, count, ToNccl(type), ToNccl(op), comm_, stream_), "ncclAllReduce"));
  return WaitStream("allreduce");
}

Status NcclCommunicator::DoAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  return Counted(AllreduceOnStream(in, out, count, type, op), count * DataTypeSize(type));
}

Status NcclCommunicator::DoAllgather(const void* in, void* out, size_t count, DataType type) {
  RINGMASTER_RETURN_IF_ERROR(Check(ncclAllGather(in, out, count, ToNccl(type), comm_, stream_), "ncclAllGather"));
  return Counted(WaitStream("allgather"), count * DataTypeSize(type));
}

Status NcclCommunicator::DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType type) {
  // One broadcast per rank into its slot of out, fused in one NCCL group.
  RINGMASTER_RETURN_IF_ERROR(Check(ncclGroupStart(), "ncclGroupStart"));
  size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    if (counts[r] > 0) {
      (void)Check(ncclBroadcast(r == rank_ ? in : nullptr, At(out, offset, type), counts[r], ToNccl(type), r, comm_,
                                stream_),
                  "ncclBroadcast");
    }
    offset += counts[r];
  }
  RINGMASTER_RETURN_IF_ERROR(Check(ncclGroupEnd(), "ncclGroupEnd"));
  return Counted(WaitStream("allgatherv"), counts[rank_] * DataTypeSize(type));
}

Status NcclCommunicator::DoBroadcast(const void* in, void* out, size_t count, DataType type, int root) {
  RINGMASTER_RETURN_IF_ERROR(
      Check(ncclBroadcast(in, out, count, ToNccl(type), root, comm_, stream_), "ncclBroadcast"));
  return Counted(WaitStream("broadcast"), count * DataTypeSize(type));
}

Status NcclCommunicator::DoReduceScatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  // Our in-place means "result in the first count elements"; NCCL's in-place is out == in + rank*count.
  void* recv = in == out ? At(out, count * rank_, type) : out;
  RINGMASTER_RETURN_IF_ERROR(
      Check(ncclReduceScatter(in, recv, count, ToNccl(type), ToNccl(op), comm_, stream_), "ncclReduceScatter"));
  if (recv != out) {
    if (cudaError_t e = cudaMemcpyAsync(out, recv, count * DataTypeSize(type), cudaMemcpyDeviceToDevice, stream_);
        e != cudaSuccess) {
      return Fail("cudaMemcpyAsync: " + CudaError(e));
    }
  }
  return Counted(WaitStream("reduce-scatter"), count * DataTypeSize(type) * static_cast<size_t>(size_));
}

StatusOr<void*> NcclCommunicator::Scratch(size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  // The stream may still read the old buffer: drained by WaitStream before every call returns.
  if (scratch_) cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  if (cudaError_t e = cudaMalloc(&scratch_, bytes); e != cudaSuccess) {
    scratch_ = nullptr;
    return UnavailableError("cudaMalloc(" + std::to_string(bytes) + "): " + CudaError(e));
  }
  scratch_bytes_ = bytes;
  return scratch_;
}

Status NcclCommunicator::DoAlltoall(const void* in, void* out, size_t count, DataType type) {
  if (in == out) {
    // NCCL's send/recv pairs would overwrite blocks not yet sent: send from a copy.
    const size_t bytes = count * DataTypeSize(type) * static_cast<size_t>(size_);
    RINGMASTER_ASSIGN_OR_RETURN(void* copy, Scratch(bytes));
    if (cudaError_t e = cudaMemcpyAsync(copy, in, bytes, cudaMemcpyDeviceToDevice, stream_); e != cudaSuccess) {
      return Fail("cudaMemcpyAsync: " + CudaError(e));
    }
    in = copy;
  }
  RINGMASTER_RETURN_IF_ERROR(Check(ncclGroupStart(), "ncclGroupStart"));
  for (int r = 0; r < size_; ++r) {
    (void)Check(ncclSend(At(in, count * r, type), count, ToNccl(type), r, comm_, stream_), "ncclSend");
    (void)Check(ncclRecv(At(out, count * r, type), count, ToNccl(type), r, comm_, stream_), "ncclRecv");
  }
  RINGMASTER_RETURN_IF_ERROR(Check(ncclGroupEnd(), "ncclGroupEnd"));
  return Counted(WaitStream("alltoall"), count * DataTypeSize(type) * static_cast<size_t>(size_));
}

Status NcclCommunicator::DoBarrier() {
  RINGMASTER_ASSIGN_OR_RETURN(void* word, Scratch(sizeof(int32_t)));
  return AllreduceOnStream(word, word, 1, DataType::kInt32, ReduceOp::kSum);
}

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::DoSplit(const std::vector<int>& ranks,
                                                                const std::string& name) {
  int new_rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == rank_) new_rank = static_cast<int>(i);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t child = nullptr;
  // Every parent rank calls Split; leavers pass NCCL_SPLIT_NOCOLOR.
  RINGMASTER_RETURN_IF_ERROR(Check(
      ncclCommSplit(comm_, new_rank >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, rank_, &child, &config), "ncclCommSplit"));
  RINGMASTER_RETURN_IF_ERROR(WaitComm("ncclCommSplit"));
  if (new_rank < 0) return std::unique_ptr<Communicator>();
  if (child == nullptr) return Fail("ncclCommSplit returned no communicator for a member");
  return Adopt(child, prefix_ + "/set/" + name, new_rank, static_cast<int>(ranks.size()), "ncclCommSplit");
}

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::Adopt(ncclComm* child, std::string prefix, int rank,
                                                                int size, const char* what) {
  ncclResult_t r = PollComm(child, Clock::now() + options_.timeout, nullptr);
  if (r != ncclSuccess) {
    ncclCommAbort(child);
    return AbortedError(std::string(what) + " of '" + prefix + "' " +
                        (r == ncclInProgress ? "timed out" : std::string("failed: ") + ncclGetErrorString(r)));
  }
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    ncclCommAbort(child);
    return UnavailableError("cudaStreamCreate: " + CudaError(e));
  }
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(prefix), rank, size, options_, loaded_, child,
                                                            stream));
}

bool NcclCommunicator::can_shrink() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_.HasCommShrink() && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0) && !nccl_aborted_;
}

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::DoShrink(const std::vector<int>& excluded,
                                                                 const std::string& name) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  if (!loaded_.HasCommShrink()) {
    return UnimplementedError("NCCL " + loaded_.ToString() + " has no ncclCommShrink (2.27+): build a new communicator");
  }
  bool revoked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (nccl_aborted_) {
      return FailedPreconditionError("communicator '" + prefix_ + "' was aborted (its NCCL resources are released); "
                                     "build a new communicator");
    }
    revoked = revoked_;
  }
  int flags = NCCL_SHRINK_ABORT;  // something may still be in flight: terminate it first
  if (revoked) {
    // A revoked communicator turns ncclSuccess once quiescent; then a plain shrink is safe.
    ncclResult_t quiet = PollComm(comm_, Clock::now() + options_.timeout, nullptr);
    if (quiet != ncclSuccess) {
      return AbortedError("communicator '" + prefix_ + "' did not quiesce after revoke: " +
                          (quiet == ncclInProgress ? "timed out" : ncclGetErrorString(quiet)));
    }
    flags = NCCL_SHRINK_DEFAULT;
  }
  std::vector<int> list(excluded);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t child = nullptr;
  ncclResult_t r = ncclCommShrink(comm_, list.data(), static_cast<int>(list.size()), &child, &config, flags);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (child) ncclCommAbort(child);
    return AbortedError(std::string("ncclCommShrink of '") + prefix_ + "': " + ncclGetErrorString(r));
  }
  if (child == nullptr) return AbortedError("ncclCommShrink of '" + prefix_ + "' returned no communicator");
  const int below = static_cast<int>(std::lower_bound(excluded.begin(), excluded.end(), rank_) - excluded.begin());
  return Adopt(child, name, rank_ - below, size_ - static_cast<int>(excluded.size()), "ncclCommShrink");
#else
  (void)excluded;
  return UnimplementedError("built against NCCL " + nccl::CompiledVersion().ToString() +
                            " without ncclCommShrink: build a new communicator for '" + name + "'");
#endif
}

}  // namespace ringmaster::runtime
