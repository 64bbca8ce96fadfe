#include "tests/gpu_emulation/communicator.h"

#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/group.h"
#include "tests/gpu_emulation/log.h"

namespace gpuemu {

std::shared_ptr<Mesh> CommCore::GetMesh() {
  std::lock_guard<std::mutex> lock(mu);
  return mesh;
}

void CommCore::SetAbortFlags(uint32_t value) {
  std::shared_ptr<Flag> child;
  {
    std::lock_guard<std::mutex> lock(mu);
    child = child_abort_flag;
  }
  std::lock_guard<std::mutex> lock(ops_mu_);
  if (child) child->store(value);
  abort_flag->store(value);
  if (value) ++epoch_;  // under ops_mu_: no batch can start unseen in between (BeginOp)
  ops_cv_.notify_all();
}

uint64_t CommCore::Epoch() {
  std::lock_guard<std::mutex> lock(ops_mu_);
  return epoch_;
}

void CommCore::OpQueued() {
  std::lock_guard<std::mutex> lock(ops_mu_);
  ++pending_;
}

bool CommCore::BeginOp(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(ops_mu_);
  if (epoch != epoch_ || revoked.load()) return false;
  ++running_;
  return true;
}

void CommCore::EndOp(bool ran) {
  std::lock_guard<std::mutex> lock(ops_mu_);
  if (ran) --running_;
  --pending_;
  ops_cv_.notify_all();
}

void CommCore::WaitRunning() {
  std::unique_lock<std::mutex> lock(ops_mu_);
  ops_cv_.wait(lock, [&] { return running_ == 0; });
}

void CommCore::WaitPending() {
  std::unique_lock<std::mutex> lock(ops_mu_);
  ops_cv_.wait(lock, [&] { return pending_ == 0; });
}

void SetAsyncError(CommCore& comm, ncclResult_t state) { comm.async_result.store(state); }

ncclResult_t GetAsyncError(CommCore& comm) {
  if (StickyError(comm.cuda_dev) != cudaSuccess) {
    // as NCCL's CUDACHECK on a call that meets the device's sticky error: ncclUnhandledCudaError
    int expected = ncclSuccess;
    comm.async_result.compare_exchange_strong(expected, ncclUnhandledCudaError);
  }
  auto state = static_cast<ncclResult_t>(comm.async_result.load());
  if (state == ncclSuccess) {
    // as ncclCommGetAsyncError: the group job linked to the communicator is completed (joined: its
    // thread has published the result and is ending)
    std::vector<std::shared_ptr<GroupJob>> linked;
    {
      std::lock_guard<std::mutex> lock(comm.mu);
      linked.swap(comm.group_jobs);
    }
    for (auto& job : linked) GroupJobComplete(*job);
  }
  return state;
}

ncclResult_t EnsureReady(CommCore& comm) {
  if (comm.Aborted()) {
    // as ncclCommEnsureReady: an aborted communicator's group jobs are aborted and joined
    std::vector<std::shared_ptr<GroupJob>> jobs;
    {
      std::lock_guard<std::mutex> lock(comm.mu);
      jobs.swap(comm.group_jobs);
    }
    for (auto& job : jobs) GroupJobAbort(*job);
    return ncclSuccess;
  }
  ncclResult_t state = GetAsyncError(comm);
  if (state == ncclInProgress) {
    Warn(comm.cuda_dev, "Attempt to use communicator before the previous operation returned ncclSuccess");
    return ncclInvalidArgument;
  }
  return state;
}

ncclResult_t PtrCheck(const void* ptr, const char* opname, const char* ptrname) {
  if (ptr == nullptr) {
    Warn(-1, "%s : %s argument is NULL", opname, ptrname);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t CommCheck(const ncclComm* comm, const char* opname, const char* ptrname) {
  if (ncclResult_t r = PtrCheck(comm, opname, ptrname); r != ncclSuccess) return r;
  if (comm->start_magic != ncclComm::kMagic || comm->end_magic != ncclComm::kMagic || !comm->core) {
    Warn(-1, "Error: corrupted comm object detected");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclComm* NewComm(std::shared_ptr<CommCore> core) {
  auto* comm = new ncclComm;
  comm->core = std::move(core);
  return comm;
}

void FreeComm(ncclComm* comm) {
  comm->start_magic = comm->end_magic = 0;
  comm->core.reset();
  delete comm;
}

}  // namespace gpuemu
