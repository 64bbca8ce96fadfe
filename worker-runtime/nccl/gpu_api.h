// The entry points of the CUDA runtime and of NCCL that Ringmaster calls, resolved with dlsym from
// the libraries gpu_libraries.h finds (the real ones, or the CPU emulation under
// RINGMASTER_EMULATED_GPUS). Every CUDA and NCCL call of the runtime goes through these tables, so
// what NCCL the process loaded -- not what headers we compiled with -- decides what exists.
//
// Members carry the C functions' own names and types (from cuda_runtime_api.h and nccl.h): call
// `cuda->cudaSetDevice(d)`, `nccl->ncclAllReduce(...)`. The fault-tolerance calls are optional:
// null when the loaded NCCL lacks the symbol or is older than the release that made it work
// (ncclCommShrink 2.27.3, ncclCommRevoke 2.28.7, ncclCommGrow/ncclCommGetUniqueId 2.29.2).
//
// Ownership: the process's tables live as long as the process (the libraries are never closed).
// Thread-safety: the tables are constant after loading; the functions are as thread-safe as CUDA
// and NCCL make them (CUDA's current device is per thread: see DeviceGuard).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "base/status.h"
#include "worker-runtime/nccl/gpu_libraries.h"
#include "worker-runtime/nccl/nccl_version.h"

namespace ringmaster::nccl {

struct CudaApi {
  LoadedLibrary library;
  decltype(&::cudaGetDeviceCount) cudaGetDeviceCount;
  decltype(&::cudaSetDevice) cudaSetDevice;
  decltype(&::cudaGetDevice) cudaGetDevice;
  decltype(&::cudaGetErrorName) cudaGetErrorName;
  decltype(&::cudaGetErrorString) cudaGetErrorString;
  decltype(&::cudaGetLastError) cudaGetLastError;
  cudaError_t (*cudaMalloc)(void** ptr, size_t bytes);  // (nccl.h brings cuda_runtime.h's template overload)
  decltype(&::cudaFree) cudaFree;
  decltype(&::cudaMemcpy) cudaMemcpy;
  // (CUDA 13's cuda_runtime.h, which nccl.h includes, overloads it with a template taking cudaMemcpyAttributes)
  cudaError_t (*cudaMemcpyAsync)(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
  decltype(&::cudaMemset) cudaMemset;
  decltype(&::cudaStreamCreateWithFlags) cudaStreamCreateWithFlags;
  decltype(&::cudaStreamDestroy) cudaStreamDestroy;
  decltype(&::cudaStreamQuery) cudaStreamQuery;
  decltype(&::cudaStreamSynchronize) cudaStreamSynchronize;
  decltype(&::cudaStreamWaitEvent) cudaStreamWaitEvent;
  decltype(&::cudaEventCreateWithFlags) cudaEventCreateWithFlags;
  decltype(&::cudaEventRecord) cudaEventRecord;
  decltype(&::cudaEventSynchronize) cudaEventSynchronize;
  decltype(&::cudaEventDestroy) cudaEventDestroy;
  decltype(&::cudaPointerGetAttributes) cudaPointerGetAttributes;

  // "cudaErrorNoDevice: no CUDA-capable device is detected".
  std::string ErrorText(cudaError_t e) const;
};

struct NcclApi {
  LoadedLibrary library;
  Version version;  // ncclGetVersion of the loaded library
  decltype(&::ncclGetVersion) ncclGetVersion;
  decltype(&::ncclGetErrorString) ncclGetErrorString;
  decltype(&::ncclGetUniqueId) ncclGetUniqueId;
  decltype(&::ncclCommInitRankConfig) ncclCommInitRankConfig;
  decltype(&::ncclCommGetAsyncError) ncclCommGetAsyncError;
  decltype(&::ncclCommAbort) ncclCommAbort;
  decltype(&::ncclCommFinalize) ncclCommFinalize;  // (2.14) an orderly teardown: Finalize, then Destroy
  decltype(&::ncclCommDestroy) ncclCommDestroy;
  decltype(&::ncclCommSplit) ncclCommSplit;
  decltype(&::ncclGroupStart) ncclGroupStart;
  decltype(&::ncclGroupEnd) ncclGroupEnd;
  decltype(&::ncclAllReduce) ncclAllReduce;
  decltype(&::ncclAllGather) ncclAllGather;
  decltype(&::ncclBroadcast) ncclBroadcast;
  decltype(&::ncclReduceScatter) ncclReduceScatter;
  decltype(&::ncclSend) ncclSend;
  decltype(&::ncclRecv) ncclRecv;
  // Optional (see the top of this file): null when this NCCL does not have them.
  decltype(&::ncclCommShrink) ncclCommShrink = nullptr;
  decltype(&::ncclCommRevoke) ncclCommRevoke = nullptr;
  decltype(&::ncclCommGrow) ncclCommGrow = nullptr;
  decltype(&::ncclCommGetUniqueId) ncclCommGetUniqueId = nullptr;

  // What this NCCL lacks of the fault-tolerance API and what that costs, for one log line;
  // empty when it has it all.
  std::string MissingFeatures() const;
};

// Resolves the tables from libraries already opened. Errors: FailedPrecondition naming the first
// required entry point the library lacks; Internal when ncclGetVersion fails.
StatusOr<std::unique_ptr<CudaApi>> ResolveCudaApi(LoadedLibrary library);
StatusOr<std::unique_ptr<NcclApi>> ResolveNcclApi(LoadedLibrary library);

// The process's tables, searched for (GpuLibrarySearch::FromEnvironment) and resolved on the first
// call; later calls return the same table or the same error. Loading an NCCL without Shrink or
// Revoke writes one warning line to stderr (a lost peer then costs a full rebuild).
StatusOr<const CudaApi*> Cuda();
StatusOr<const NcclApi*> Nccl();

// Whether `ptr` is host memory (malloc'ed, or pinned by CUDA) rather than memory a GPU owns (device or
// managed): a collective on it runs on the host beside NCCL (Runtime). Errors: Unavailable when the CUDA
// runtime cannot be loaded; InvalidArgument when CUDA refuses the pointer.
StatusOr<bool> IsHostMemory(const void* ptr);

// Makes `device` the calling thread's current CUDA device for the guard's life, then restores the
// previous one (CUDA's current device is per thread; NCCL and cudaMalloc act on it). status() is the
// error when the device could not be set: InvalidArgument (no such device), FailedPrecondition (no usable
// driver), DataLoss (a sticky error), else Unavailable (gpu_errors.h).
class DeviceGuard {
 public:
  DeviceGuard(const CudaApi& cuda, int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  const CudaApi& cuda_;
  int previous_ = -1;
  Status status_;
};

}  // namespace ringmaster::nccl
