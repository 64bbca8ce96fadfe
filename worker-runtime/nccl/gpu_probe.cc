#include "worker-runtime/nccl/gpu_probe.h"

#include <unistd.h>

#include <cstdlib>

#include "worker-runtime/nccl/gpu_api.h"

namespace ringmaster::nccl {

GpuEvidence GpuEvidence::OfThisProcess() {
  GpuEvidence e;
  e.device_nodes = ::access("/dev/nvidiactl", F_OK) == 0 || ::access("/dev/nvidia0", F_OK) == 0;
  if (const char* v = std::getenv("NVIDIA_VISIBLE_DEVICES")) e.nvidia_visible_devices = v;
  return e;
}

bool GpuEvidence::HasGpus() const {
  const std::string& v = nvidia_visible_devices;
  return device_nodes || !(v.empty() || v == "void" || v == "none");
}

StatusOr<int> VisibleGpus(const GpuEvidence& evidence) {
  const std::string remedy =
      "; fix the node's NVIDIA driver or the pod's GPU allocation, or set RINGMASTER_BACKEND=gloo to train on CPU "
      "on purpose";
  StatusOr<const CudaApi*> cuda = Cuda();
  if (!cuda.ok()) {
    if (cuda.status().code() == StatusCode::kNotFound && !evidence.HasGpus()) return 0;
    if (cuda.status().code() == StatusCode::kNotFound) {
      return UnavailableError("this process was given GPUs but no CUDA runtime loads: " + cuda.status().message() +
                              remedy);
    }
    return cuda.status();
  }
  int count = 0;
  cudaError_t e = (*cuda)->cudaGetDeviceCount(&count);
  if (e == cudaSuccess) return count;
  (void)(*cuda)->cudaGetLastError();  // clear the sticky error
  const bool no_gpu_here = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver;
  if (no_gpu_here && !evidence.HasGpus()) return 0;
  return UnavailableError("cudaGetDeviceCount failed on a machine with GPUs (" +
                          std::string(evidence.device_nodes
                                          ? "/dev/nvidia* present"
                                          : "NVIDIA_VISIBLE_DEVICES=" + evidence.nvidia_visible_devices) +
                          "): " + (*cuda)->ErrorText(e) + remedy);
}

int VisibleGpuCount() {
  StatusOr<int> n = VisibleGpus();
  return n.ok() ? *n : 0;
}

}  // namespace ringmaster::nccl
