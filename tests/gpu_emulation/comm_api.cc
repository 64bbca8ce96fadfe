// The NCCL entry points of a communicator's life (init.cc): init, split, shrink, grow, revoke,
// finalize, destroy, abort. Each follows its NCCL counterpart: an implicit group around the call,
// synchronous checks, then a job queued with ncclAsyncLaunch (comm_jobs.h) that runs at the group's
// end -- now for a blocking communicator, on the group's thread for a non-blocking one.
#include <algorithm>
#include <cstring>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/bootstrap.h"
#include "tests/gpu_emulation/comm_jobs.h"
#include "tests/gpu_emulation/communicator.h"
#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/group.h"
#include "tests/gpu_emulation/log.h"
#include "tests/gpu_emulation/settings.h"
#include "tests/gpu_emulation/tags.h"

using namespace gpuemu;

namespace {

// as parseCommConfig (init.cc), for what the emulation uses: blocking. A config from an older or
// newer header is read up to its own size.
ncclResult_t ParseConfig(const ncclConfig_t* config, bool* blocking) {
  ncclConfig_t internal = NCCL_CONFIG_INITIALIZER;
  size_t real_size = 0;
  std::memcpy(&real_size, config, sizeof real_size);
  real_size = std::min(real_size, sizeof(ncclConfig_t));
  std::memcpy(static_cast<void*>(&internal), config, real_size);
  if (internal.magic != NCCL_API_MAGIC) {
    Warn(-1, "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  if (internal.version < NCCL_VERSION(2, 14, 0)) internal.blocking = NCCL_CONFIG_UNDEF_INT;
  if (internal.blocking != NCCL_CONFIG_UNDEF_INT && internal.blocking != 0 && internal.blocking != 1) {
    Warn(-1, "Invalid config blocking attribute value %d", internal.blocking);
    return ncclInvalidArgument;
  }
  *blocking = internal.blocking != 0;  // NCCL_CONFIG_DEFAULT: blocking
  // as envConfigOverride: NCCL_COMM_BLOCKING
  if (GetSettings().comm_blocking >= 0) *blocking = GetSettings().comm_blocking == 1;
  return ncclSuccess;
}

// as copyCommConfig: a child without a config of its own takes its parent's.
bool InheritBlocking(const CommCore& parent) {
  return GetSettings().comm_blocking >= 0 ? GetSettings().comm_blocking == 1 : parent.blocking;
}

ncclResult_t CudaDevice(int* dev) {
  // as CUDACHECK(cudaGetDevice(&cudaDev))
  if (CheckDevices() != cudaSuccess) {
    Warn(0, "Cuda failure 'no CUDA-capable device is detected'");
    return ncclUnhandledCudaError;
  }
  *dev = CurrentDevice();
  return ncclSuccess;
}

// as ncclCommInitRankDev (init.cc)
ncclResult_t InitRankDev(ncclComm_t* newcomm, int nranks, const ncclUniqueId& id, int myrank, int cuda_dev,
                         const ncclConfig_t* config) {
  if (ncclResult_t r = PtrCheck(newcomm, "CommInitRank", "newcomm"); r != ncclSuccess) return r;
  if (ncclResult_t r = PtrCheck(config, "CommInitRank", "config"); r != ncclSuccess) return r;
  if (nranks < 1 || myrank < 0 || myrank >= nranks) {
    Warn(cuda_dev, "Invalid rank requested : %d/%d", myrank, nranks);
    *newcomm = nullptr;
    return ncclInvalidArgument;
  }
  bool blocking = true;
  if (ncclResult_t r = ParseConfig(config, &blocking); r != ncclSuccess) {
    *newcomm = nullptr;
    return r;
  }
  auto core = std::make_shared<CommCore>();
  core->rank = myrank;
  core->nranks = nranks;
  core->cuda_dev = cuda_dev;
  core->phys_dev = PhysicalDevice(cuda_dev);
  core->blocking = blocking;
  core->init_state.store(ncclInProgress);  // ncclSuccess once the init job succeeds
  ncclComm* handle = NewComm(core);
  *newcomm = handle;
  InitJobArgs args;
  args.comm = core;
  args.handle = handle;
  if (!DecodeId(id, &args.id)) {
    // the job fails as a bootstrap to a garbage address would
    args.has_id = false;
    args.id = IdHandle{};
  }
  const bool valid_id = args.has_id;
  ncclResult_t r = AsyncLaunch(
      [args, valid_id]() -> ncclResult_t {
        if (!valid_id) {
          Warn(args.comm->cuda_dev, "Bootstrap : the ncclUniqueId was not made by ncclGetUniqueId of this emulation");
          args.comm->init_state.store(ncclSystemError);
          return ncclSystemError;
        }
        return InitRankJob(args);
      },
      core);
  if (r != ncclSuccess) {
    FreeComm(handle);
    *newcomm = nullptr;
  }
  return r;
}

// as ncclCommInitChildComm (init.cc): the synchronous half of ncclCommSplit and ncclCommShrink.
ncclResult_t InitChildComm(ncclComm_t comm, ncclComm_t* newcomm, bool is_shrink, int color, int key, int* exclude,
                           int exclude_count, ncclConfig_t* config, const char* caller) {
  const int old_dev = CurrentDevice();
  ncclResult_t res = CommCheck(comm, caller, "comm");
  if (res == ncclSuccess) res = PtrCheck(newcomm, caller, "newcomm");
  std::vector<int> excluded;
  if (res == ncclSuccess && is_shrink) {
    res = PtrCheck(exclude, caller, "excludeRanksList");
    if (res == ncclSuccess && exclude_count <= 0) res = ncclInvalidArgument;
    if (res == ncclSuccess) {
      std::sort(exclude, exclude + exclude_count);  // NCCL sorts the caller's list in place (qsort)
      excluded.assign(exclude, exclude + exclude_count);
      // the excluded ranks do not call: the caller may not be one of them
      if (std::binary_search(excluded.begin(), excluded.end(), comm->core->rank)) res = ncclInvalidArgument;
      // (the emulation also refuses ranks that do not exist, or twice the same)
      if (excluded.front() < 0 || excluded.back() >= comm->core->nranks ||
          std::adjacent_find(excluded.begin(), excluded.end()) != excluded.end()) {
        Warn(comm->core->cuda_dev, "%s : invalid excludeRanksList", caller);
        res = ncclInvalidArgument;
      }
    }
  }
  if (res != ncclSuccess) {
    SetCurrentDevice(old_dev);
    return res;
  }
  std::shared_ptr<CommCore> parent = comm->core;
  if ((res = EnsureReady(*parent)) != ncclSuccess) {
    SetCurrentDevice(old_dev);
    return res;
  }
  SetCurrentDevice(parent->cuda_dev);
  *newcomm = nullptr;  // "*newcomm should be NCCL_COMM_NULL until comm split fully complete"
  ChildJobArgs args;
  args.parent = parent;
  args.newcomm = newcomm;
  args.shrink = is_shrink;
  args.color = color;
  args.key = key;
  args.excluded = excluded;
  {
    std::lock_guard<std::mutex> lock(parent->mu);
    if (is_shrink) {
      uint64_t h = HashCombine(parent->id, 0x5348524bull /* "SHRK" */ + static_cast<uint64_t>(++parent->shrink_count));
      for (int r : excluded) h = HashCombine(h, static_cast<uint64_t>(r));
      args.tag = h;
    } else {
      // each split leads to a unique communicator: the parent's childCount
      args.tag = HashCombine(parent->id, static_cast<uint64_t>(++parent->child_count));
    }
  }
  if (is_shrink || color != NCCL_SPLIT_NOCOLOR) {
    auto child = std::make_shared<CommCore>();
    bool blocking = true;
    if (config == nullptr) {
      blocking = InheritBlocking(*parent);
    } else if ((res = ParseConfig(config, &blocking)) != ncclSuccess) {
      SetCurrentDevice(old_dev);
      return res;
    }
    child->blocking = blocking;
    child->cuda_dev = parent->cuda_dev;
    child->phys_dev = parent->phys_dev;
    child->id = is_shrink ? args.tag : HashCombine(args.tag, static_cast<uint64_t>(static_cast<uint32_t>(color)));
    child->init_state.store(ncclInternalError);  // "changed to ncclSuccess if init succeeds"
    {
      // the parent's abort also aborts the child's init (comm->childAbortFlag)
      std::lock_guard<std::mutex> lock(parent->mu);
      parent->child_abort_flag = child->abort_flag;
    }
    args.child = child;
    args.child_handle = NewComm(child);
  }
  res = AsyncLaunch([args]() { return ChildJob(args); }, parent);
  if (res != ncclSuccess) {
    if (args.child_handle) FreeComm(args.child_handle);
    std::lock_guard<std::mutex> lock(parent->mu);
    parent->child_abort_flag.reset();
    *newcomm = nullptr;
  }
  SetCurrentDevice(old_dev);
  return res;
}

// The end of an entry point's implicit group: its error, or the call's own result.
ncclResult_t EndGroup(ncclResult_t res) {
  GroupErrCheck(res);
  ncclResult_t end = GroupEndInternal();
  if (end != ncclSuccess && end != ncclInProgress) return end;
  return res;
}

}  // namespace

extern "C" {

ncclResult_t ncclCommInitRank(ncclComm_t* newcomm, int nranks, ncclUniqueId commId, int myrank) {
  // as ncclCommInitRank: no group of its own, so outside a group it runs now, in the caller
  int dev = 0;
  if (ncclResult_t r = CudaDevice(&dev); r != ncclSuccess) return r;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  return InitRankDev(newcomm, nranks, commId, myrank, dev, &config);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* newcomm, int nranks, ncclUniqueId commId, int myrank,
                                    ncclConfig_t* config) {
  // as ncclCommInitRankConfig: non-blocking -> ncclInProgress, the state of *newcomm says when done
  GroupStartInternal();
  int dev = 0;
  ncclResult_t ret = CudaDevice(&dev);
  ncclConfig_t internal = NCCL_CONFIG_INITIALIZER;
  if (ret == ncclSuccess) ret = InitRankDev(newcomm, nranks, commId, myrank, dev, config ? config : &internal);
  if (ret != ncclSuccess && newcomm && *newcomm && !(*newcomm)->core->blocking) {
    SetAsyncError(*(*newcomm)->core, ret);
  }
  GroupErrCheck(ret);
  ncclResult_t end = GroupEndInternal();
  if (end != ncclSuccess && end != ncclInProgress) return end;
  if (newcomm && *newcomm && !(*newcomm)->core->blocking) ret = GetAsyncError(*(*newcomm)->core);
  return ret;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  // as ncclCommSplit: returns the synchronous part's result; the parent's state tells when the
  // child exists (non-blocking: *newcomm is written from the job's thread at its end)
  GroupStartInternal();
  ncclResult_t res = InitChildComm(comm, newcomm, false, color, key, nullptr, 0, config, "ncclCommSplit");
  return EndGroup(res);
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags) {
  // as ncclCommShrink
  GroupStartInternal();
  ncclResult_t res = CommCheck(comm, "ncclCommShrink", "comm");
  if (res == ncclSuccess && (shrinkFlags & NCCL_SHRINK_ABORT)) {
    // error mode: abort what is in flight, wait for the kernels to exit, lower the flags again
    comm->core->SetAbortFlags(1);
    comm->core->WaitRunning();
    comm->core->SetAbortFlags(0);
  }
  if (res == ncclSuccess) {
    res = InitChildComm(comm, newcomm, true, 0, comm->core->rank, excludeRanksList, excludeRanksCount, config,
                        "ncclCommShrink");
  }
  return EndGroup(res);
}

ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  // as ncclCommGetUniqueId: a grow root in this process; its id goes to the communicator's other
  // ranks (NCCL sends it to ranks 0 and n-1 only, the emulation to all), who pass no id to Grow
  if (ncclResult_t r = CommCheck(comm, "ncclCommGetUniqueId", "comm"); r != ncclSuccess) return r;
  CommCore& c = *comm->core;
  if (ncclResult_t r = EnsureReady(c); r != ncclSuccess) return r;
  if (ncclResult_t r = PtrCheck(uniqueId, "CommGetUniqueId", "uniqueId"); r != ncclSuccess) return r;
  WireAddr ip;
  if (!ParseIp(GetSettings().bind_address, &ip)) return ncclInvalidArgument;
  ReapFinishedRoots();
  IdHandle handle;
  if (ncclResult_t r = StartRoot(ip, RandomMagic(), &handle); r != ncclSuccess) return r;
  EncodeId(handle, uniqueId);
  uint64_t next_child;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    next_child = static_cast<uint64_t>(c.child_count + 1);  // the grow that follows increments it
  }
  const uint64_t tag = MakeTag(TagKind::kGrowHandle, HashCombine(c.id, next_child));
  std::shared_ptr<Mesh> mesh = c.GetMesh();
  for (int p = 0; mesh && p < c.nranks; ++p) {
    if (p != c.rank) mesh->Send(p, tag, uniqueId->internal, sizeof uniqueId->internal, AbortCheck(c.abort_flag));
  }
  return ncclSuccess;
}

ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config) {
  // as ncclCommGrow: existing ranks (comm, id or NULL, -1) keep their ranks; new ranks
  // (NULL, id, rank). *newcomm is written at the call and again at the job's end; the new
  // communicator's own state tells when it is ready.
  if (newcomm == nullptr) return ncclInvalidArgument;
  if (nRanks <= 0) {
    Warn(-1, "ncclCommGrow: total ranks must be positive, got %d", nRanks);
    return ncclInvalidArgument;
  }
  if (comm && comm->core && nRanks <= comm->core->nranks) {
    Warn(comm->core->cuda_dev, "ncclCommGrow: total ranks %d is less than current ranks %d", nRanks,
         comm->core->nranks);
    return ncclInvalidArgument;
  }
  const bool existing = comm != nullptr;
  *newcomm = nullptr;
  GroupStartInternal();
  ncclResult_t res = ncclSuccess;
  InitJobArgs args;
  args.grow = true;
  int dev = 0, my_rank = rank;
  bool blocking = GetSettings().comm_blocking >= 0 ? GetSettings().comm_blocking == 1 : true;
  if (existing) {
    res = CommCheck(comm, "ncclCommGrow", "comm");
    if (res == ncclSuccess) res = EnsureReady(*comm->core);
    if (res == ncclSuccess && rank != -1) {
      Warn(comm->core->cuda_dev, "ncclCommGrow: existing ranks must pass rank=-1, got %d", rank);
      res = ncclInvalidArgument;
    }
    if (res == ncclSuccess) {
      CommCore& c = *comm->core;
      uint64_t child;
      {
        std::lock_guard<std::mutex> lock(c.mu);
        child = static_cast<uint64_t>(++c.child_count);
      }
      args.parent = comm->core;
      args.grow_tag = MakeTag(TagKind::kGrowHandle, HashCombine(c.id, child));
      dev = c.cuda_dev;
      my_rank = c.rank;
      blocking = InheritBlocking(c);
    }
  } else {
    if (rank < 0) {
      Warn(-1, "ncclCommGrow: new ranks must pass valid rank >= 0, got %d", rank);
      res = ncclInvalidArgument;
    } else if (uniqueId == nullptr) {
      Warn(-1, "ncclCommGrow: new ranks must pass non-NULL uniqueId");
      res = ncclInvalidArgument;
    } else if (rank >= nRanks) {
      Warn(-1, "ncclCommGrow: new rank %d exceeds total ranks %d", rank, nRanks);
      res = ncclInvalidArgument;
    }
    if (res == ncclSuccess) res = CudaDevice(&dev);
  }
  if (res == ncclSuccess && config != nullptr) res = ParseConfig(config, &blocking);
  if (res == ncclSuccess) {
    if (uniqueId != nullptr && !DecodeId(*uniqueId, &args.id)) {
      Warn(dev, "ncclCommGrow: the ncclUniqueId was not made by ncclCommGetUniqueId of this emulation");
      res = ncclInvalidArgument;
    }
    args.has_id = uniqueId != nullptr;
  }
  if (res == ncclSuccess) {
    auto core = std::make_shared<CommCore>();
    core->rank = my_rank;
    core->nranks = nRanks;
    core->cuda_dev = dev;
    core->phys_dev = PhysicalDevice(dev);
    core->blocking = blocking;
    core->init_state.store(ncclInProgress);
    args.comm = core;
    args.handle = NewComm(core);
    args.newcomm = newcomm;
    *newcomm = args.handle;
    res = AsyncLaunch([args]() { return InitRankJob(args); }, core);
    if (res != ncclSuccess) {
      FreeComm(args.handle);
      *newcomm = nullptr;
    }
  }
  return EndGroup(res);
}

ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  // as ncclCommRevoke: in-flight operations stop (abort flags), the communicator stays; it is
  // ncclInProgress until quiescent, then ncclSuccess, and only splits, shrinks and teardown remain
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = CommCheck(comm, "ncclCommRevoke", "comm"); r != ncclSuccess) return r;
  if (revokeFlags != NCCL_REVOKE_DEFAULT) return ncclInvalidArgument;
  std::shared_ptr<CommCore> c = comm->core;
  if (c->destroy_flag.load() || c->finalize_called.load()) return ncclInvalidArgument;
  if (c->revoked.load()) return ncclInvalidArgument;
  GroupStartInternal();
  c->SetAbortFlags(1);
  c->revoked.store(true);
  (void)EnsureReady(*c);
  c->finalize_called.store(true);
  ncclResult_t res = AsyncLaunch([c]() { return RevokeJob(c); }, c);
  if (res != ncclSuccess && !c->blocking) SetAsyncError(*c, res);
  GroupErrCheck(res);
  ncclResult_t end = GroupEndInternal();
  if (end != ncclSuccess && end != ncclInProgress) return end;
  if (!c->blocking) res = GetAsyncError(*c);
  return res;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  // as ncclCommFinalize: waits for this rank's queued work (the emulation needs no collective)
  GroupStartInternal();
  ncclResult_t ret = ncclSuccess;
  std::shared_ptr<CommCore> c;
  if (comm != nullptr) {
    ret = CommCheck(comm, "ncclCommFinalize", "comm");
    if (ret == ncclSuccess) {
      c = comm->core;
      ret = EnsureReady(*c);
    }
    if (ret == ncclSuccess && c->finalize_called.load()) ret = ncclInvalidArgument;  // double finalize
    if (ret == ncclSuccess) {
      c->finalize_called.store(true);
      ret = AsyncLaunch([c]() { return DestroySyncJob(c); }, c);
    }
    if (ret != ncclSuccess && c && !c->blocking) SetAsyncError(*c, ret);
  }
  GroupErrCheck(ret);
  ncclResult_t end = GroupEndInternal();
  if (end != ncclSuccess && end != ncclInProgress) return end;
  if (c && !c->blocking) ret = GetAsyncError(*c);
  return ret;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  // as ncclCommDestroy: after the communicator's work is done, everything is freed
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = CommCheck(comm, "ncclCommDestroy", "comm"); r != ncclSuccess) {
    Warn(-1, "comm %p has already been destroyed", static_cast<void*>(comm));
    return ncclInvalidArgument;
  }
  std::shared_ptr<CommCore> c = comm->core;
  GroupStartInternal();
  c->destroy_flag.store(true);
  ncclResult_t res = EnsureReady(*c);  // the init (or the last group) must be done
  if (res == ncclSuccess) res = AsyncLaunch([comm]() { return ReclaimJob(comm); }, c);
  res = EndGroup(res);
  Info(c->cuda_dev, "comm %p rank %d nranks %d cudaDev %d - Destroy COMPLETE", static_cast<void*>(comm), c->rank,
       c->nranks, c->cuda_dev);
  return res;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  // as ncclCommAbort: safe in any state; whatever runs stops, everything is freed
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = CommCheck(comm, "ncclCommAbort", "comm"); r != ncclSuccess) return r;
  std::shared_ptr<CommCore> c = comm->core;
  GroupStartInternal();
  c->SetAbortFlags(1);
  c->destroy_flag.store(true);
  (void)EnsureReady(*c);  // joins the init or group job still running (it sees the flags)
  ncclResult_t res = AsyncLaunch([comm]() { return ReclaimJob(comm); }, c);
  res = EndGroup(res);
  Info(c->cuda_dev, "comm %p rank %d nranks %d cudaDev %d - Abort COMPLETE", static_cast<void*>(comm), c->rank,
       c->nranks, c->cuda_dev);
  return res;
}

}  // extern "C"
