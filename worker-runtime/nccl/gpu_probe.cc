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

StatusOr<int> DeviceIndex(int device, int local_rank, int gpus, bool multi_rank_gpu) {
  const bool assigned = device >= 0;
  const int index = assigned ? device : local_rank;
  if (index < 0) return InvalidArgumentError("no GPU index for local rank " + std::to_string(local_rank));
  if (index < gpus) return index;
  if (multi_rank_gpu && gpus > 0) return index % gpus;  // ranks share GPUs on purpose (NCCL >= 2.30)
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string n = std::to_string(gpus);
  return InvalidArgumentError(
      (assigned ? "RINGMASTER_DEVICE=" + std::to_string(device) + " (local rank " + std::to_string(local_rank) + ")"
                : "local rank " + std::to_string(local_rank)) +
      " needs GPU " + std::to_string(index) + " but only " + n + " GPU" + (gpus == 1 ? " is" : "s are") +
      " visible (CUDA_VISIBLE_DEVICES=" + (visible ? visible : "<unset>") + "): start at most " + n +
      " workers per node or give each pod nvidia.com/gpu: N (NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share a GPU)");
}

StatusOr<int> DeviceIndex(int device, int local_rank) {
  RINGMASTER_ASSIGN_OR_RETURN(int gpus, VisibleGpus());
  if (gpus == 0) return UnavailableError("no GPU is visible to this process");
  const char* multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return DeviceIndex(device, local_rank, gpus, multi != nullptr && std::string(multi) == "1");
}

}  // namespace ringmaster::nccl
