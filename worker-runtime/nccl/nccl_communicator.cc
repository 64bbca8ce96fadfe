#include "worker-runtime/nccl/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>

#include "worker-runtime/comm/validate.h"
#include "worker-runtime/nccl/gpu_errors.h"

namespace ringmaster::nccl {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t ToNccl(common::DataType t) {
  switch (t) {
    case common::DataType::kFloat32: return ncclFloat32;
    case common::DataType::kFloat64: return ncclFloat64;
    case common::DataType::kFloat16: return ncclFloat16;
    case common::DataType::kBFloat16: return ncclBfloat16;
    case common::DataType::kInt32: return ncclInt32;
    case common::DataType::kInt64: return ncclInt64;
    case common::DataType::kUInt8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ToNccl(common::ReduceOp op) {
  switch (op) {
    case common::ReduceOp::kSum: return ncclSum;
    case common::ReduceOp::kAvg: return ncclAvg;
    case common::ReduceOp::kMin: return ncclMin;
    case common::ReduceOp::kMax: return ncclMax;
    case common::ReduceOp::kProduct: return ncclProd;
  }
  return ncclSum;
}

const uint8_t* At(const void* p, size_t elements, common::DataType t) {
  return static_cast<const uint8_t*>(p) + elements * common::DataTypeSize(t);
}
uint8_t* At(void* p, size_t elements, common::DataType t) {
  return static_cast<uint8_t*>(p) + elements * common::DataTypeSize(t);
}

// Polls a non-blocking communicator until it leaves ncclInProgress (or the deadline, or an abort request:
// then ncclInProgress).
ncclResult_t PollComm(const nccl::NcclApi& nccl, ncclComm_t comm, Clock::time_point deadline,
                      const std::atomic<bool>* abort_requested) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = nccl.ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() > deadline || (abort_requested && abort_requested->load())) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::string Outcome(const nccl::NcclApi& nccl, ncclResult_t r) {
  return r == ncclInProgress ? "timed out" : std::string("failed: ") + nccl.ncclGetErrorString(r);
}

// The unique id of `prefix`: made by rank 0 and published in the store, read by the others.
StatusOr<ncclUniqueId> ExchangeUniqueId(const nccl::NcclApi& nccl, store::Store& store, const std::string& prefix,
                                        int rank, std::chrono::milliseconds timeout) {
  ncclUniqueId id;
  const std::string key = prefix + "/nccl-unique-id";
  if (rank == 0) {
    if (ncclResult_t r = nccl.ncclGetUniqueId(&id); r != ncclSuccess) {
      return UnavailableError(std::string("ncclGetUniqueId: ") + nccl.ncclGetErrorString(r));
    }
    RINGMASTER_RETURN_IF_ERROR(store.Set(key, std::string(id.internal, sizeof id.internal)));
    return id;
  }
  RINGMASTER_ASSIGN_OR_RETURN(std::string v, store.Get(key, timeout));
  if (v.size() != sizeof id.internal) return InternalError("malformed NCCL unique id in the store");
  std::memcpy(id.internal, v.data(), sizeof id.internal);
  return id;
}

}  // namespace

StatusOr<std::unique_ptr<comm::Communicator>> NcclCommunicator::Create(std::shared_ptr<store::Store> store,
                                                                       std::string prefix, int rank, int size,
                                                                       NcclOptions options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " of size " + std::to_string(size));
  }
  RINGMASTER_ASSIGN_OR_RETURN(const nccl::CudaApi* cuda, nccl::Cuda());
  RINGMASTER_ASSIGN_OR_RETURN(const nccl::NcclApi* nccl, nccl::Nccl());
  nccl::DeviceGuard device(*cuda, options.device);
  RINGMASTER_RETURN_IF_ERROR(device.status());
  RINGMASTER_ASSIGN_OR_RETURN(ncclUniqueId id, ExchangeUniqueId(*nccl, *store, prefix, rank, options.timeout));
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cuda->cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return Status(CudaFailureCode(e, StatusCode::kUnavailable),
                  "cudaStreamCreate: " + cuda->ErrorText(e) + StickyNote(e, options.device));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;  // written at the call (init.cc, ncclCommInitRankDev), ready when the poll ends
  ncclResult_t r = nccl->ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (r == ncclInProgress || r == ncclSuccess) {
    r = comm ? PollComm(*nccl, comm, Clock::now() + options.timeout, nullptr) : r;
  }
  if (r != ncclSuccess) {
    if (comm) nccl->ncclCommAbort(comm);
    cuda->cudaStreamDestroy(stream);
    // A refusal (ncclInvalidUsage: two ranks on one GPU), or NCCL's CUDA failing, ends the worker; a peer
    // that died or never came is Aborted (gpu_errors.h).
    return Status(NcclFailureCode(r, /*at_init=*/true), "NCCL init of '" + prefix + "' (rank " + std::to_string(rank) +
                                                            " of " + std::to_string(size) + ", GPU " +
                                                            std::to_string(options.device) + ") " + Outcome(*nccl, r));
  }
  return std::unique_ptr<comm::Communicator>(
      new NcclCommunicator(*cuda, *nccl, std::move(prefix), rank, size, options, comm, stream));
}

NcclCommunicator::NcclCommunicator(const nccl::CudaApi& cuda, const nccl::NcclApi& nccl, std::string prefix, int rank,
                                   int size, NcclOptions options, ncclComm* comm, CUstream_st* stream)
    : prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      options_(options),
      cuda_(cuda),
      nccl_(nccl),
      comm_(comm),
      stream_(stream) {}

NcclCommunicator::~NcclCommunicator() {
  nccl::DeviceGuard device(cuda_, options_.device);
  std::lock_guard<std::mutex> lock(mu_);
  // An orderly end (healthy, never revoked, aborted or asked to abort, no async error): finalize, then destroy,
  // as NCCL's documented teardown. Anything else is aborted: Destroy runs Finalize, which waits on the peers and
  // hangs if one is gone. Aborting the parent also stops any child init it still runs, so NCCL is done with the
  // abandoned slots after it.
  if (!nccl_aborted_ && !(Orderly() && Finalized())) nccl_.ncclCommAbort(comm_);
  for (auto& slot : abandoned_children_) {
    if (ncclComm* late = __atomic_load_n(slot.get(), __ATOMIC_ACQUIRE)) nccl_.ncclCommAbort(late);
  }
  if (scratch_) cuda_.cudaFree(scratch_);
  cuda_.cudaStreamDestroy(stream_);
}

bool NcclCommunicator::Orderly() const {
  if (!broken_.ok() || revoked_ || nccl_aborted_ || abort_requested_ || !abandoned_children_.empty()) return false;
  ncclResult_t async = ncclInProgress;
  return nccl_.ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async == ncclSuccess;
}

bool NcclCommunicator::Finalized() {
  ncclResult_t r = nccl_.ncclCommFinalize(comm_);
  // Non-blocking: ncclInProgress until every queued operation is done and the peers have finalized too.
  if (r == ncclSuccess || r == ncclInProgress) r = PollComm(nccl_, comm_, Clock::now() + options_.timeout, nullptr);
  if (r != ncclSuccess) return false;  // the caller aborts it
  if (ncclResult_t d = nccl_.ncclCommDestroy(comm_); d != ncclSuccess && d != ncclInProgress) {
    nccl_.ncclCommAbort(comm_);  // Destroy refused it: its resources must still be released
  }
  nccl_aborted_ = true;  // (released either way: nothing may touch comm_ now)
  return true;
}

template <typename Fn>
auto NcclCommunicator::OnDevice(Fn call) -> decltype(call()) {
  std::lock_guard<std::mutex> inside(call_mu_);
  nccl::DeviceGuard device(cuda_, options_.device);
  if (const Status& set = device.status(); !set.ok()) {
    // A lost context or a missing device ends the worker (gpu_errors.h); a passing CUDA error is a broken communicator.
    return Fail(set.message(), set.code() == StatusCode::kUnavailable ? StatusCode::kAborted : set.code());
  }
  return call();
}

Status NcclCommunicator::DoOrderAfter(comm::ReadyFence& fence) {
  nccl::DeviceGuard device(cuda_, options_.device);
  if (!device.status().ok()) return device.status();
  return fence.OrderStream(stream_);
}

void NcclCommunicator::Abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.ok()) broken_ = AbortedError("communicator '" + prefix_ + "' aborted: " + reason);
  }
  abort_requested_ = true;  // the thread inside NCCL, if any, revokes or aborts it
}

Status NcclCommunicator::health() const {
  // A collective that returned OK may still be followed by an asynchronous error (a proxy's connection
  // failing later): ask NCCL, unless another thread is inside the communicator (it will see the error
  // itself) or the communicator is already broken, revoked or aborted.
  std::unique_lock<std::mutex> inside(call_mu_, std::try_to_lock);
  std::lock_guard<std::mutex> lock(mu_);
  if (!inside.owns_lock() || !broken_.ok() || nccl_aborted_ || revoked_) return broken_;
  ncclResult_t async = ncclSuccess;
  if (nccl_.ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
    broken_ = Status(NcclFailureCode(async, /*at_init=*/false), "communicator '" + prefix_ + "' rank " +
                                                                    std::to_string(rank_) +
                                                                    ": asynchronous NCCL error: " + NcclError(async));
  }
  return broken_;
}

Status NcclCommunicator::Fail(const std::string& why, StatusCode code) {
  std::lock_guard<std::mutex> lock(mu_);
  // What no rebuild repairs (DataLoss: the GPU's context is lost) outranks an abort already recorded.
  if (broken_.ok() || (code != StatusCode::kAborted && broken_.code() == StatusCode::kAborted)) {
    broken_ = Status(code, "communicator '" + prefix_ + "' rank " + std::to_string(rank_) +
                               (code == StatusCode::kAborted ? "" : " on GPU " + std::to_string(options_.device)) +
                               ": " + why);
  }
  if (nccl_aborted_ || revoked_) return broken_;
  if (nccl_.ncclCommRevoke) {
    // Revoke stops the in-flight work like an abort but keeps the communicator, so the survivors can shrink
    // it instead of building a new one. On a non-blocking communicator it queues an async job and answers
    // ncclInProgress until the communicator is quiescent (init.cc, ncclCommRevoke / commRevokeAsync).
    ncclResult_t r = nccl_.ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT);
    if (r == ncclSuccess || r == ncclInProgress) {
      revoked_ = true;
      return broken_;
    }
  }
  nccl_.ncclCommAbort(comm_);
  nccl_aborted_ = true;
  return broken_;
}

Status NcclCommunicator::Check(int result, const char* what) {
  auto r = static_cast<ncclResult_t>(result);
  if (r == ncclSuccess || r == ncclInProgress) return Status::Ok();
  return Fail(std::string(what) + ": " + nccl_.ncclGetErrorString(r), NcclFailureCode(r, /*at_init=*/false));
}

Status NcclCommunicator::Grouped(
    const std::function<void(const std::function<void(int, const char*)>& check)>& enqueue) {
  if (ncclResult_t r = nccl_.ncclGroupStart(); r != ncclSuccess) {
    return Fail(std::string("ncclGroupStart: ") + nccl_.ncclGetErrorString(r));
  }
  std::string first_error;
  enqueue([&](int result, const char* what) {
    auto r = static_cast<ncclResult_t>(result);
    if (r != ncclSuccess && r != ncclInProgress && first_error.empty()) {
      first_error = std::string(what) + ": " + nccl_.ncclGetErrorString(r);
    }
  });
  // Close the group before anything else: Revoke or Abort inside it would be queued until its end.
  ncclResult_t end = nccl_.ncclGroupEnd();
  if (!first_error.empty()) return Fail(first_error);
  return Check(end, "ncclGroupEnd");
}

Status NcclCommunicator::WaitComm(const char* what) {
  ncclResult_t r = PollComm(nccl_, comm_, Clock::now() + options_.timeout, &abort_requested_);
  if (r == ncclSuccess) return Status::Ok();
  if (abort_requested_) return Fail(std::string(what) + ": aborted on request");
  if (r == ncclInProgress) return Fail(std::string(what) + ": timed out");
  // (a kernel's fault may show here first, as ncclUnhandledCudaError: NcclError names the CUDA error)
  return Fail(std::string(what) + ": failed: " + NcclError(r), NcclFailureCode(r, /*at_init=*/false));
}

Status NcclCommunicator::WaitStream(const char* what) {
  RINGMASTER_RETURN_IF_ERROR(WaitComm(what));  // enqueue finished (non-blocking mode)
  const auto deadline = Clock::now() + options_.timeout;
  for (;;) {
    cudaError_t e = cuda_.cudaStreamQuery(stream_);
    if (e == cudaSuccess) return Drained(what);
    if (e != cudaErrorNotReady) {
      return Fail(std::string(what) + ": " + cuda_.ErrorText(e) + StickyNote(e, options_.device),
                  CudaFailureCode(e, StatusCode::kAborted));
    }
    ncclResult_t async = ncclSuccess;
    nccl_.ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      return Fail(std::string(what) + ": " + nccl_.ncclGetErrorString(async),
                  NcclFailureCode(async, /*at_init=*/false));
    }
    if (abort_requested_) return Fail(std::string(what) + ": aborted on request");
    if (Clock::now() > deadline) {
      return Fail(std::string(what) + ": timed out after " + std::to_string(options_.timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::string NcclCommunicator::NcclError(int result) const {
  auto r = static_cast<ncclResult_t>(result);
  std::string text = nccl_.ncclGetErrorString(r);
  if (r != ncclUnhandledCudaError) return text;
  // Name the CUDA error behind it: the stream's (a kernel's fault is sticky), else the thread's last one.
  cudaError_t e = cuda_.cudaStreamQuery(stream_);
  if (e == cudaSuccess || e == cudaErrorNotReady) e = cuda_.cudaGetLastError();
  return e == cudaSuccess || e == cudaErrorNotReady ? text : text + " (" + cuda_.ErrorText(e) + ")";
}

Status NcclCommunicator::Drained(const char* what) {
  // NCCL 2.30.7's kernels end either complete or early, when the communicator's abort flag rises (abort,
  // revoke, shrink-abort): both leave the stream idle. Only a communicator with no async error, not being
  // revoked (ncclInProgress) and never asked to abort vouches for the result.
  ncclResult_t async = ncclSuccess;
  if (ncclResult_t r = nccl_.ncclCommGetAsyncError(comm_, &async); r != ncclSuccess) {
    return Fail(std::string(what) + ": ncclCommGetAsyncError: " + nccl_.ncclGetErrorString(r));
  }
  if (async == ncclInProgress) return Fail(std::string(what) + ": the communicator is being revoked or aborted");
  if (async != ncclSuccess) {
    return Fail(std::string(what) + ": " + NcclError(async), NcclFailureCode(async, /*at_init=*/false));
  }
  if (abort_requested_) return Fail(std::string(what) + ": aborted on request (its result may be partial)");
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.ok()) return broken_;
  if (revoked_ || nccl_aborted_) return AbortedError("communicator '" + prefix_ + "' was revoked or aborted");
  return Status::Ok();
}

Status NcclCommunicator::CheckBuffers(std::initializer_list<std::pair<const void*, const char*>> buffers) const {
  for (const auto& [ptr, role] : buffers) {
    if (ptr == nullptr) continue;  // the base class refused the nulls that matter
    cudaPointerAttributes attr{};
    if (cuda_.cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
      (void)cuda_.cudaGetLastError();  // cannot tell: NCCL's own check (CudaPtrCheck) decides
      continue;
    }
    const std::string gpu = "GPU " + std::to_string(options_.device);
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
      return InvalidArgumentError(std::string("'") + role + "' is host memory, but communicator '" + prefix_ +
                                  "' runs NCCL on " + gpu + ": move the tensor to " + gpu);
    }
    if (attr.type == cudaMemoryTypeDevice && attr.device != options_.device) {
      return InvalidArgumentError(std::string("'") + role + "' is memory of GPU " + std::to_string(attr.device) +
                                  ", but communicator '" + prefix_ + "' runs on " + gpu + ": move the tensor to " +
                                  gpu + " (one rank, one GPU)");
    }
  }
  return Status::Ok();
}

Status NcclCommunicator::Counted(Status done, size_t bytes) {
  if (done.ok() && options_.traffic) options_.traffic->Add(options_.device, bytes);
  return done;
}

Status NcclCommunicator::AllreduceOnStream(const void* in, void* out, size_t count, common::DataType type,
                                           common::ReduceOp op) {
  RINGMASTER_RETURN_IF_ERROR(
      Check(nccl_.ncclAllReduce(in, out, count, ToNccl(type), ToNccl(op), comm_, stream_), "ncclAllReduce"));
  return WaitStream("allreduce");
}

Status NcclCommunicator::DoAllreduce(const void* in, void* out, size_t count, common::DataType type,
                                     common::ReduceOp op) {
  return OnDevice([&] {
    RINGMASTER_RETURN_IF_ERROR(CheckBuffers({{in, "in"}, {out, "out"}}));
    return Counted(AllreduceOnStream(in, out, count, type, op), count * common::DataTypeSize(type));
  });
}

Status NcclCommunicator::DoAllgather(const void* in, void* out, size_t count, common::DataType type) {
  return OnDevice([&] {
    RINGMASTER_RETURN_IF_ERROR(CheckBuffers({{in, "in"}, {out, "out"}}));
    RINGMASTER_RETURN_IF_ERROR(
        Check(nccl_.ncclAllGather(in, out, count, ToNccl(type), comm_, stream_), "ncclAllGather"));
    return Counted(WaitStream("allgather"), count * common::DataTypeSize(type));
  });
}

Status NcclCommunicator::DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                                      common::DataType type) {
  return OnDevice([&] {
    // A rank that sends nothing never reads `in`: its address may be anything, such as one past the end of an
    // in-place `out` (the last rank's slot when it is empty), which CUDA reports as no memory of its own.
    RINGMASTER_RETURN_IF_ERROR(CheckBuffers({{counts[rank_] > 0 ? in : nullptr, "in"}, {out, "out"}}));
    // One broadcast per rank into its slot of out, fused in one NCCL group.
    RINGMASTER_RETURN_IF_ERROR(Grouped([&](const auto& check) {
      size_t offset = 0;
      for (int r = 0; r < size_; ++r) {
        if (counts[r] > 0) {
          check(nccl_.ncclBroadcast(r == rank_ ? in : nullptr, At(out, offset, type), counts[r], ToNccl(type), r, comm_,
                                    stream_),
                "ncclBroadcast");
        }
        offset += counts[r];
      }
    }));
    return Counted(WaitStream("allgatherv"), counts[rank_] * common::DataTypeSize(type));
  });
}

Status NcclCommunicator::DoBroadcast(const void* in, void* out, size_t count, common::DataType type, int root) {
  return OnDevice([&] {
    RINGMASTER_RETURN_IF_ERROR(CheckBuffers({{root == rank_ ? in : nullptr, "in"}, {out, "out"}}));
    RINGMASTER_RETURN_IF_ERROR(
        Check(nccl_.ncclBroadcast(in, out, count, ToNccl(type), root, comm_, stream_), "ncclBroadcast"));
    return Counted(WaitStream("broadcast"), count * common::DataTypeSize(type));
  });
}

Status NcclCommunicator::DoReduceScatter(const void* in, void* out, size_t count, common::DataType type,
                                         common::ReduceOp op) {
  return OnDevice([&] {
    RINGMASTER_RETURN_IF_ERROR(CheckBuffers({{in, "in"}, {out, "out"}}));
    // Our in-place means "result in the first count elements"; NCCL's in-place is out == in + rank*count.
    void* recv = in == out ? At(out, count * rank_, type) : out;
    RINGMASTER_RETURN_IF_ERROR(
        Check(nccl_.ncclReduceScatter(in, recv, count, ToNccl(type), ToNccl(op), comm_, stream_), "ncclReduceScatter"));
    if (recv != out) {
      // The copy must follow the collective on the stream: a non-blocking enqueue may still be in flight.
      RINGMASTER_RETURN_IF_ERROR(WaitComm("reduce-scatter enqueue"));
      if (cudaError_t e =
              cuda_.cudaMemcpyAsync(out, recv, count * common::DataTypeSize(type), cudaMemcpyDeviceToDevice, stream_);
          e != cudaSuccess) {
        return Fail("cudaMemcpyAsync: " + cuda_.ErrorText(e) + StickyNote(e, options_.device),
                    CudaFailureCode(e, StatusCode::kAborted));
      }
    }
    return Counted(WaitStream("reduce-scatter"), count * common::DataTypeSize(type) * static_cast<size_t>(size_));
  });
}

StatusOr<void*> NcclCommunicator::Scratch(size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  // The stream may still read the old buffer: drained by WaitStream before every call returns.
  if (scratch_) cuda_.cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  // On this communicator's device: the callers run under OnDevice.
  if (cudaError_t e = cuda_.cudaMalloc(&scratch_, bytes); e != cudaSuccess) {
    scratch_ = nullptr;
    return UnavailableError("cudaMalloc(" + std::to_string(bytes) + "): " + cuda_.ErrorText(e));
  }
  scratch_bytes_ = bytes;
  return scratch_;
}

Status NcclCommunicator::DoAlltoall(const void* in, void* out, size_t count, common::DataType type) {
  return OnDevice([&]() -> Status {
    RINGMASTER_RETURN_IF_ERROR(CheckBuffers({{in, "in"}, {out, "out"}}));
    if (in == out) {
      // NCCL's send/recv pairs would overwrite blocks not yet sent: send from a copy.
      const size_t bytes = count * common::DataTypeSize(type) * static_cast<size_t>(size_);
      RINGMASTER_ASSIGN_OR_RETURN(void* copy, Scratch(bytes));
      if (cudaError_t e = cuda_.cudaMemcpyAsync(copy, in, bytes, cudaMemcpyDeviceToDevice, stream_); e != cudaSuccess) {
        return Fail("cudaMemcpyAsync: " + cuda_.ErrorText(e) + StickyNote(e, options_.device),
                    CudaFailureCode(e, StatusCode::kAborted));
      }
      in = copy;
    }
    RINGMASTER_RETURN_IF_ERROR(Grouped([&](const auto& check) {
      for (int r = 0; r < size_; ++r) {
        check(nccl_.ncclSend(At(in, count * r, type), count, ToNccl(type), r, comm_, stream_), "ncclSend");
        check(nccl_.ncclRecv(At(out, count * r, type), count, ToNccl(type), r, comm_, stream_), "ncclRecv");
      }
    }));
    return Counted(WaitStream("alltoall"), count * common::DataTypeSize(type) * static_cast<size_t>(size_));
  });
}

Status NcclCommunicator::DoBarrier() {
  return OnDevice([&]() -> Status {
    RINGMASTER_ASSIGN_OR_RETURN(void* word, Scratch(sizeof(int32_t)));
    return AllreduceOnStream(word, word, 1, common::DataType::kInt32, common::ReduceOp::kSum);
  });
}

StatusOr<ncclComm*> NcclCommunicator::AwaitChild(std::unique_ptr<ncclComm*> slot, const char* what, bool abortable) {
  const bool interrupted = abortable && abort_requested_;
  ncclResult_t r =
      interrupted ? ncclInProgress
                  : PollComm(nccl_, comm_, Clock::now() + options_.timeout, abortable ? &abort_requested_ : nullptr);
  if (r != ncclSuccess) {
    // NCCL's thread may still write the slot: it stays ours until the parent's abort (below, then the destructor).
    abandoned_children_.push_back(std::move(slot));
    const std::string why =
        std::string(what) + " " + (abortable && abort_requested_ ? "aborted on request" : Outcome(nccl_, r));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_.ok()) broken_ = AbortedError("communicator '" + prefix_ + "': " + why);
      if (!nccl_aborted_) nccl_.ncclCommAbort(comm_);  // also aborts the child's init (childAbortFlag)
      nccl_aborted_ = true;
    }
    return AbortedError(why + " (rank " + std::to_string(rank_) + " of '" + prefix_ + "')");
  }
  return __atomic_load_n(slot.get(), __ATOMIC_ACQUIRE);
}

StatusOr<std::unique_ptr<comm::Communicator>> NcclCommunicator::DoSplit(const std::vector<int>& ranks,
                                                                        const std::string& name) {
  return OnDevice([&]() -> StatusOr<std::unique_ptr<comm::Communicator>> {
    int new_rank = -1;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] == rank_) new_rank = static_cast<int>(i);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    auto slot = std::make_unique<ncclComm*>(nullptr);
    // Every parent rank calls Split; leavers pass NCCL_SPLIT_NOCOLOR.
    RINGMASTER_RETURN_IF_ERROR(
        Check(nccl_.ncclCommSplit(comm_, new_rank >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, rank_, slot.get(), &config),
              "ncclCommSplit"));
    RINGMASTER_ASSIGN_OR_RETURN(ncclComm * child, AwaitChild(std::move(slot), "ncclCommSplit", /*abortable=*/true));
    if (new_rank < 0) return std::unique_ptr<comm::Communicator>();
    if (child == nullptr) return Fail("ncclCommSplit made no communicator for a member");
    return Adopt(child, prefix_ + "/set/" + name, new_rank, static_cast<int>(ranks.size()), "ncclCommSplit");
  });
}

StatusOr<std::unique_ptr<comm::Communicator>> NcclCommunicator::Adopt(ncclComm* child, std::string prefix, int rank,
                                                                      int size, const char* what) {
  ncclResult_t r = PollComm(nccl_, child, Clock::now() + options_.timeout, nullptr);
  if (r != ncclSuccess) {
    nccl_.ncclCommAbort(child);
    return AbortedError(std::string(what) + " of '" + prefix + "' " + Outcome(nccl_, r));
  }
  cudaStream_t stream = nullptr;  // on this communicator's device: the callers run under OnDevice
  if (cudaError_t e = cuda_.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    nccl_.ncclCommAbort(child);
    return UnavailableError("cudaStreamCreate: " + cuda_.ErrorText(e));
  }
  return std::unique_ptr<comm::Communicator>(
      new NcclCommunicator(cuda_, nccl_, std::move(prefix), rank, size, options_, child, stream));
}

bool NcclCommunicator::can_shrink() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nccl_.ncclCommShrink != nullptr && !nccl_aborted_;
}

StatusOr<std::unique_ptr<comm::Communicator>> NcclCommunicator::DoShrink(const std::vector<int>& excluded,
                                                                         const std::string& name) {
  if (!nccl_.ncclCommShrink) {
    return UnimplementedError("NCCL " + nccl_.version.ToString() +
                              " has no ncclCommShrink (2.27.3+): build a new communicator");
  }
  bool revoked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (nccl_aborted_) {
      return FailedPreconditionError("communicator '" + prefix_ +
                                     "' was aborted (its NCCL resources are released); "
                                     "build a new communicator");
    }
    revoked = revoked_;
  }
  return OnDevice([&]() -> StatusOr<std::unique_ptr<comm::Communicator>> {
    int flags = NCCL_SHRINK_ABORT;  // something may still be in flight: terminate it first
    if (revoked) {
      // A revoked communicator answers ncclInProgress until quiescent, then ncclSuccess; then a plain shrink
      // is safe (ncclCommRevoke's contract in nccl.h).
      ncclResult_t quiet = PollComm(nccl_, comm_, Clock::now() + options_.timeout, nullptr);
      if (quiet != ncclSuccess) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!nccl_aborted_) nccl_.ncclCommAbort(comm_);
        nccl_aborted_ = true;
        return AbortedError("communicator '" + prefix_ + "' did not quiesce after revoke: " + Outcome(nccl_, quiet));
      }
      flags = NCCL_SHRINK_DEFAULT;
    }
    std::vector<int> list(excluded);  // NCCL sorts it in place
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    auto slot = std::make_unique<ncclComm*>(nullptr);
    ncclResult_t r =
        nccl_.ncclCommShrink(comm_, list.data(), static_cast<int>(list.size()), slot.get(), &config, flags);
    if (r != ncclSuccess && r != ncclInProgress) {
      return AbortedError(std::string("ncclCommShrink of '") + prefix_ + "': " + nccl_.ncclGetErrorString(r));
    }
    RINGMASTER_ASSIGN_OR_RETURN(ncclComm * child, AwaitChild(std::move(slot), "ncclCommShrink", /*abortable=*/false));
    if (child == nullptr) return AbortedError("ncclCommShrink of '" + prefix_ + "' made no communicator");
    const int below = static_cast<int>(std::lower_bound(excluded.begin(), excluded.end(), rank_) - excluded.begin());
    return Adopt(child, name, rank_ - below, size_ - static_cast<int>(excluded.size()), "ncclCommShrink");
  });
}

bool NcclCommunicator::can_grow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nccl_.ncclCommGrow != nullptr && broken_.ok();
}

StatusOr<std::unique_ptr<comm::Communicator>> NcclCommunicator::Grow(store::Store& store, const std::string& prefix,
                                                                     int new_size) {
  if (!nccl_.ncclCommGrow) {
    return UnimplementedError("NCCL " + nccl_.version.ToString() +
                              " has no ncclCommGrow (2.29.2+): build a new communicator");
  }
  if (new_size <= size_) {
    return InvalidArgumentError("grow to " + std::to_string(new_size) + " ranks from " + std::to_string(size_));
  }
  if (Status h = health(); !h.ok()) return FailedPreconditionError("cannot grow a broken communicator: " + h.message());
  return OnDevice([&]() -> StatusOr<std::unique_ptr<comm::Communicator>> {
    // Existing root: a grow id from the communicator (ncclCommGetUniqueId), published for the newcomers;
    // the other existing ranks pass no id (nccl.h: "Existing non-root: comm, uniqueId=NULL, rank=-1").
    ncclUniqueId id;
    const ncclUniqueId* id_arg = nullptr;
    if (rank_ == 0) {
      RINGMASTER_RETURN_IF_ERROR(Check(nccl_.ncclCommGetUniqueId(comm_, &id), "ncclCommGetUniqueId"));
      RINGMASTER_RETURN_IF_ERROR(WaitComm("ncclCommGetUniqueId"));
      RINGMASTER_RETURN_IF_ERROR(store.Set(prefix + "/nccl-grow-id", std::string(id.internal, sizeof id.internal)));
      id_arg = &id;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    // Grow writes the new handle at the call and again from NCCL's thread when its job ends (init.cc,
    // ncclCommGrow / ncclCommInitRankFunc), so the slot lives on the heap; its readiness is the new comm's.
    auto slot = std::make_unique<ncclComm*>(nullptr);
    RINGMASTER_RETURN_IF_ERROR(
        Check(nccl_.ncclCommGrow(comm_, new_size, id_arg, -1, slot.get(), &config), "ncclCommGrow"));
    ncclComm* child = __atomic_load_n(slot.get(), __ATOMIC_ACQUIRE);
    if (child == nullptr) return Fail("ncclCommGrow made no communicator");
    auto grown = Adopt(child, prefix, rank_, new_size, "ncclCommGrow");
    if (!grown.ok()) (void)slot.release();  // NCCL's thread may still write it: a deliberate 8-byte leak
    return grown;
  });
}

StatusOr<std::unique_ptr<comm::Communicator>> NcclCommunicator::JoinGrown(std::shared_ptr<store::Store> store,
                                                                          std::string prefix, int rank, int new_size,
                                                                          NcclOptions options) {
  RINGMASTER_ASSIGN_OR_RETURN(const nccl::CudaApi* cuda, nccl::Cuda());
  RINGMASTER_ASSIGN_OR_RETURN(const nccl::NcclApi* nccl, nccl::Nccl());
  if (!nccl->ncclCommGrow) {
    return UnimplementedError("NCCL " + nccl->version.ToString() + " has no ncclCommGrow (2.29.2+)");
  }
  nccl::DeviceGuard device(*cuda, options.device);
  RINGMASTER_RETURN_IF_ERROR(device.status());
  RINGMASTER_ASSIGN_OR_RETURN(std::string v, store->Get(prefix + "/nccl-grow-id", options.timeout));
  ncclUniqueId id;
  if (v.size() != sizeof id.internal) return InternalError("malformed NCCL grow id in the store");
  std::memcpy(id.internal, v.data(), sizeof id.internal);
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cuda->cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return Status(CudaFailureCode(e, StatusCode::kUnavailable),
                  "cudaStreamCreate: " + cuda->ErrorText(e) + StickyNote(e, options.device));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  auto slot = std::make_unique<ncclComm*>(nullptr);  // written at the call and at the job's end, as in Grow
  ncclResult_t r = nccl->ncclCommGrow(nullptr, new_size, &id, rank, slot.get(), &config);
  ncclComm_t comm = __atomic_load_n(slot.get(), __ATOMIC_ACQUIRE);
  if ((r == ncclInProgress || r == ncclSuccess) && comm)
    r = PollComm(*nccl, comm, Clock::now() + options.timeout, nullptr);
  if (r != ncclSuccess || comm == nullptr) {
    if (comm) nccl->ncclCommAbort(comm);
    cuda->cudaStreamDestroy(stream);
    (void)slot.release();  // NCCL's thread may still write it: a deliberate 8-byte leak
    return AbortedError("NCCL grow of '" + prefix + "' (new rank " + std::to_string(rank) + " of " +
                        std::to_string(new_size) + ") " + (comm ? Outcome(*nccl, r) : "made no communicator"));
  }
  return std::unique_ptr<comm::Communicator>(
      new NcclCommunicator(*cuda, *nccl, std::move(prefix), rank, new_size, options, comm, stream));
}

}  // namespace ringmaster::nccl
