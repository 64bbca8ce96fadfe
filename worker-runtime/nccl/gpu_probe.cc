#include "nccl/gpu_probe.h"

#include <cuda_runtime_api.h>

namespace ringmaster::nccl {

int VisibleGpuCount() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

}  // namespace ringmaster::nccl
