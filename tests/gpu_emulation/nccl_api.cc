// NCCL entry points that are not about one communicator's life or its collectives: versions,
// error strings, the unique id, the async state and the queries, groups.
#include <cstring>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/bootstrap.h"
#include "tests/gpu_emulation/communicator.h"
#include "tests/gpu_emulation/group.h"
#include "tests/gpu_emulation/log.h"
#include "tests/gpu_emulation/settings.h"

using namespace gpuemu;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  // as ncclGetVersion (init.cc); the code is RINGMASTER_EMULATED_NCCL_VERSION when set
  if (version == nullptr) return ncclInvalidArgument;
  *version = GetSettings().nccl_version;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t code) {
  // as ncclGetErrorString (init.cc)
  switch (code) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "timeout";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  // as ncclGetLastError (init.cc): the last WARN of the process; comm is unused
  (void)comm;
  return LastWarning();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* out) {
  // as ncclGetUniqueId / bootstrapGetUniqueId: a root in this process, its address in the id
  if (ncclResult_t r = PtrCheck(out, "GetUniqueId", "out"); r != ncclSuccess) return r;
  ReapFinishedRoots();
  WireAddr ip;
  if (!ParseIp(GetSettings().bind_address, &ip)) {
    Warn(-1, "Bootstrap : RINGMASTER_EMULATED_NCCL_ADDR=%s is not an IP address", GetSettings().bind_address.c_str());
    return ncclInvalidArgument;
  }
  IdHandle handle;
  if (ncclResult_t r = StartRoot(ip, RandomMagic(), &handle); r != ncclSuccess) return r;
  EncodeId(handle, out);
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  // as ncclCommGetAsyncError (init.cc)
  if (ncclResult_t r = CommCheck(comm, "ncclGetAsyncError", "comm"); r != ncclSuccess) return r;
  if (ncclResult_t r = PtrCheck(asyncError, "ncclGetAsyncError", "asyncError"); r != ncclSuccess) return r;
  *asyncError = GetAsyncError(*comm->core);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  // as ncclCommCount (init.cc)
  if (ncclResult_t r = CommCheck(comm, "CommCount", "comm"); r != ncclSuccess) return r;
  if (ncclResult_t r = PtrCheck(count, "CommCount", "count"); r != ncclSuccess) return r;
  if (ncclResult_t r = EnsureReady(*comm->core); r != ncclSuccess) return r;
  *count = comm->core->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* devid) {
  // as ncclCommCuDevice (init.cc)
  if (ncclResult_t r = CommCheck(comm, "CommCuDevice", "comm"); r != ncclSuccess) return r;
  if (ncclResult_t r = PtrCheck(devid, "CommCuDevice", "devid"); r != ncclSuccess) return r;
  if (ncclResult_t r = EnsureReady(*comm->core); r != ncclSuccess) return r;
  *devid = comm->core->cuda_dev;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  // as ncclCommUserRank (init.cc)
  if (ncclResult_t r = CommCheck(comm, "CommUserRank", "comm"); r != ncclSuccess) return r;
  if (ncclResult_t r = PtrCheck(rank, "CommUserRank", "rank"); r != ncclSuccess) return r;
  if (ncclResult_t r = EnsureReady(*comm->core); r != ncclSuccess) return r;
  *rank = comm->core->rank;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  // as ncclGroupStart (group.cc)
  return GroupStartInternal();
}

ncclResult_t ncclGroupEnd() {
  // as ncclGroupEnd (group.cc)
  return GroupEndInternal();
}

}  // extern "C"
