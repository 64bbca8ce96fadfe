#include "worker-runtime/nccl/gpu_api.h"

#include <dlfcn.h>

#include "base/log.h"
#include "worker-runtime/nccl/gpu_errors.h"

namespace ringmaster::nccl {
namespace {

// Resolves `name` into `*fn`; records the first missing required one in `missing`.
template <typename Fn>
void Resolve(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
}

template <typename Fn>
void ResolveOptional(void* handle, const char* name, bool usable, Fn* fn) {
  *fn = usable ? reinterpret_cast<Fn>(::dlsym(handle, name)) : nullptr;
}

#define RINGMASTER_RESOLVE(api, fn) Resolve(api->library.handle, #fn, &api->fn, &missing)

Status Missing(const LoadedLibrary& lib, const std::string& symbol) {
  return FailedPreconditionError(lib.path + " has no " + symbol +
                                 ": it is not the library it claims to be, or too old " +
                                 "(set RINGMASTER_NCCL_LIBRARY / RINGMASTER_CUDART_LIBRARY to another one)");
}

}  // namespace

std::string CudaApi::ErrorText(cudaError_t e) const {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

std::string NcclApi::MissingFeatures() const {
  std::string lacks;
  if (!ncclCommShrink) lacks += " ncclCommShrink (2.27.3)";
  if (!ncclCommRevoke) lacks += " ncclCommRevoke (2.28.7)";
  if (lacks.empty()) return "";
  return "NCCL " + version.ToString() + " at " + library.path + " lacks" + lacks +
         ": a lost peer rebuilds the communicator from scratch (a new unique id and a full init)";
}

StatusOr<std::unique_ptr<CudaApi>> ResolveCudaApi(LoadedLibrary library) {
  auto api = std::make_unique<CudaApi>();
  api->library = std::move(library);
  std::string missing;
  RINGMASTER_RESOLVE(api, cudaGetDeviceCount);
  RINGMASTER_RESOLVE(api, cudaSetDevice);
  RINGMASTER_RESOLVE(api, cudaGetDevice);
  RINGMASTER_RESOLVE(api, cudaGetErrorName);
  RINGMASTER_RESOLVE(api, cudaGetErrorString);
  RINGMASTER_RESOLVE(api, cudaGetLastError);
  RINGMASTER_RESOLVE(api, cudaMalloc);
  RINGMASTER_RESOLVE(api, cudaFree);
  RINGMASTER_RESOLVE(api, cudaMemcpy);
  RINGMASTER_RESOLVE(api, cudaMemcpyAsync);
  RINGMASTER_RESOLVE(api, cudaMemset);
  RINGMASTER_RESOLVE(api, cudaStreamCreateWithFlags);
  RINGMASTER_RESOLVE(api, cudaStreamDestroy);
  RINGMASTER_RESOLVE(api, cudaStreamQuery);
  RINGMASTER_RESOLVE(api, cudaStreamSynchronize);
  RINGMASTER_RESOLVE(api, cudaStreamWaitEvent);
  RINGMASTER_RESOLVE(api, cudaEventCreateWithFlags);
  RINGMASTER_RESOLVE(api, cudaEventRecord);
  RINGMASTER_RESOLVE(api, cudaEventSynchronize);
  RINGMASTER_RESOLVE(api, cudaEventDestroy);
  RINGMASTER_RESOLVE(api, cudaPointerGetAttributes);
  if (!missing.empty()) return Missing(api->library, missing);
  return api;
}

StatusOr<std::unique_ptr<NcclApi>> ResolveNcclApi(LoadedLibrary library) {
  auto api = std::make_unique<NcclApi>();
  api->library = std::move(library);
  std::string missing;
  RINGMASTER_RESOLVE(api, ncclGetVersion);
  RINGMASTER_RESOLVE(api, ncclGetErrorString);
  RINGMASTER_RESOLVE(api, ncclGetUniqueId);
  RINGMASTER_RESOLVE(api, ncclCommInitRankConfig);
  RINGMASTER_RESOLVE(api, ncclCommGetAsyncError);
  RINGMASTER_RESOLVE(api, ncclCommAbort);
  RINGMASTER_RESOLVE(api, ncclCommFinalize);
  RINGMASTER_RESOLVE(api, ncclCommDestroy);
  RINGMASTER_RESOLVE(api, ncclCommSplit);
  RINGMASTER_RESOLVE(api, ncclGroupStart);
  RINGMASTER_RESOLVE(api, ncclGroupEnd);
  RINGMASTER_RESOLVE(api, ncclAllReduce);
  RINGMASTER_RESOLVE(api, ncclAllGather);
  RINGMASTER_RESOLVE(api, ncclBroadcast);
  RINGMASTER_RESOLVE(api, ncclReduceScatter);
  RINGMASTER_RESOLVE(api, ncclSend);
  RINGMASTER_RESOLVE(api, ncclRecv);
  if (!missing.empty()) return Missing(api->library, missing);
  int code = 0;
  if (ncclResult_t r = api->ncclGetVersion(&code); r != ncclSuccess) {
    return InternalError(std::string("ncclGetVersion of ") + api->library.path +
                         " failed: " + api->ncclGetErrorString(r));
  }
  api->version = Version{code};
  // A symbol is not enough: a release may export a call before it works (Revoke is in 2.28.3's
  // library but first works in 2.28.7), so the version gates it too.
  const Version v = api->version;
  ResolveOptional(api->library.handle, "ncclCommShrink", v.HasCommShrink(), &api->ncclCommShrink);
  ResolveOptional(api->library.handle, "ncclCommRevoke", v.HasCommRevoke(), &api->ncclCommRevoke);
  ResolveOptional(api->library.handle, "ncclCommGrow", v.HasCommGrow(), &api->ncclCommGrow);
  ResolveOptional(api->library.handle, "ncclCommGetUniqueId", v.HasCommGrow(), &api->ncclCommGetUniqueId);
  if (!api->ncclCommGrow || !api->ncclCommGetUniqueId) api->ncclCommGrow = nullptr, api->ncclCommGetUniqueId = nullptr;
  return api;
}

#undef RINGMASTER_RESOLVE

StatusOr<const CudaApi*> Cuda() {
  static const StatusOr<std::unique_ptr<CudaApi>> api = []() -> StatusOr<std::unique_ptr<CudaApi>> {
    RINGMASTER_ASSIGN_OR_RETURN(LoadedLibrary lib, OpenCudaRuntime(GpuLibrarySearch::FromEnvironment()));
    return ResolveCudaApi(std::move(lib));
  }();
  if (!api.ok()) return api.status();
  return api->get();
}

StatusOr<bool> IsHostMemory(const void* ptr) {
  RINGMASTER_ASSIGN_OR_RETURN(const CudaApi* cuda, Cuda());
  cudaPointerAttributes attr{};
  if (cudaError_t e = cuda->cudaPointerGetAttributes(&attr, ptr); e != cudaSuccess) {
    (void)cuda->cudaGetLastError();  // not sticky: clear it for the next call on this thread
    return InvalidArgumentError("CUDA cannot tell what memory " + std::to_string(reinterpret_cast<uintptr_t>(ptr)) +
                                " is: " + cuda->ErrorText(e));
  }
  // CUDA 11+ answers cudaMemoryTypeUnregistered, with no error, for host memory it does not know.
  return attr.type == cudaMemoryTypeUnregistered || attr.type == cudaMemoryTypeHost;
}

StatusOr<const NcclApi*> Nccl() {
  static const StatusOr<std::unique_ptr<NcclApi>> api = []() -> StatusOr<std::unique_ptr<NcclApi>> {
    RINGMASTER_ASSIGN_OR_RETURN(LoadedLibrary lib, OpenNccl(GpuLibrarySearch::FromEnvironment()));
    auto resolved = ResolveNcclApi(std::move(lib));
    if (resolved.ok() && !(*resolved)->MissingFeatures().empty()) {
      Log(StderrLogSink("ringmaster-nccl"), LogLevel::kWarning, (*resolved)->MissingFeatures());
    }
    return resolved;
  }();
  if (!api.ok()) return api.status();
  return api->get();
}

DeviceGuard::DeviceGuard(const CudaApi& cuda, int device) : cuda_(cuda) {
  if (cuda_.cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  if (previous_ == device) return;
  if (cudaError_t e = cuda_.cudaSetDevice(device); e != cudaSuccess) {
    (void)cuda_.cudaGetLastError();
    // A device that does not exist, no driver, a lost context: no rebuild repairs them (gpu_errors.h).
    status_ = Status(CudaFailureCode(e, StatusCode::kUnavailable),
                     "cudaSetDevice(" + std::to_string(device) + "): " + cuda_.ErrorText(e) + StickyNote(e, device));
  }
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (previous_ >= 0 && cuda_.cudaGetDevice(&now) == cudaSuccess && now != previous_) cuda_.cudaSetDevice(previous_);
}

}  // namespace ringmaster::nccl
