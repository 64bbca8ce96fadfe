#include "worker-runtime/python/native/gpu_info.h"

#include <cuda_runtime_api.h>
#include <nanobind/stl/string.h>

#include "worker-runtime/nccl/gpu_api.h"

namespace nb = nanobind;

namespace ringmaster::python {

nb::dict NcclInfo() {
  nb::dict d;
  // The first call dlopens libnccl (a few hundred MB): without the GIL.
  StatusOr<const nccl::NcclApi*> api = [] {
    nb::gil_scoped_release release;
    return nccl::Nccl();
  }();
  if (!api.ok()) {
    d["error"] = api.status().ToString();
    return d;
  }
  const nccl::NcclApi& n = **api;
  d["version"] = n.version.ToString();
  d["version_code"] = n.version.code;
  d["path"] = n.library.path;
  d["shrink"] = n.ncclCommShrink != nullptr;
  d["revoke"] = n.ncclCommRevoke != nullptr;
  d["grow"] = n.ncclCommGrow != nullptr;
  d["emulated"] = n.library.emulated;
  return d;
}

nb::dict CudaInfo() {
  nb::dict d;
  StatusOr<const nccl::CudaApi*> api = [] {
    nb::gil_scoped_release release;
    return nccl::Cuda();
  }();
  if (!api.ok()) {
    d["error"] = api.status().ToString();
    return d;
  }
  const nccl::CudaApi& cuda = **api;
  d["path"] = cuda.library.path;
  d["emulated"] = cuda.library.emulated;
  int count = 0;
  if (cudaError_t e = cuda.cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cuda.cudaGetLastError();  // CUDA keeps the error as the thread's last one otherwise
    d["device_error"] = cuda.ErrorText(e);
  } else {
    d["device_count"] = count;
  }
  return d;
}

}  // namespace ringmaster::python
