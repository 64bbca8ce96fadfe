// How many GPUs this process can use, telling a machine without GPUs (zero, no error) from a GPU
// machine whose CUDA is broken (an error: such a pod must not quietly train on CPU, nor leave its
// peers waiting for a backend it did not pick).
#pragma once

#include <string>

#include "base/status.h"

namespace ringmaster::nccl {

// Signs that the kernel or the container runtime gave this process NVIDIA GPUs.
struct GpuEvidence {
  bool device_nodes = false;           // /dev/nvidiactl or /dev/nvidia0 exists
  std::string nvidia_visible_devices;  // NVIDIA_VISIBLE_DEVICES (set by the device plugin / toolkit)

  static GpuEvidence OfThisProcess();
  // True when GPUs were handed to this process: device nodes, or NVIDIA_VISIBLE_DEVICES naming
  // devices (anything but empty, "void" or "none").
  bool HasGpus() const;
};

// cudaGetDeviceCount through the process's CUDA runtime (gpu_api.h); the emulated count under
// RINGMASTER_EMULATED_GPUS. 0 on a machine without GPUs (no CUDA runtime to load, or CUDA reports
// no device/driver, and `evidence` shows no GPU either).
// Errors: Unavailable when `evidence` says GPUs were given but CUDA cannot use them (the CUDA
// error and what to do are in the message); FailedPrecondition when emulation is asked for and
// its library is missing.
StatusOr<int> VisibleGpus(const GpuEvidence& evidence);
inline StatusOr<int> VisibleGpus() { return VisibleGpus(GpuEvidence::OfThisProcess()); }

// VisibleGpus(), with any error counted as no GPU. For places that only report.
int VisibleGpuCount();

// The CUDA device a rank's NCCL communicator runs on: `device` when >= 0 (RINGMASTER_DEVICE, the launcher's
// assignment), else `local_rank`. An index beyond the `gpus` visible ones is refused (InvalidArgument, saying
// how many workers a node can take) instead of wrapping onto a GPU another rank uses, unless
// `multi_rank_gpu` (NCCL_MULTI_RANK_GPU_ENABLE=1: NCCL >= 2.30 lets ranks share a GPU), which wraps it
// (index % gpus). `gpus` must be > 0.
StatusOr<int> DeviceIndex(int device, int local_rank, int gpus, bool multi_rank_gpu);
// The same with this process's visible GPUs (VisibleGpus()) and NCCL_MULTI_RANK_GPU_ENABLE. Errors: also
// VisibleGpus'; Unavailable when there is no GPU.
StatusOr<int> DeviceIndex(int device, int local_rank);

}  // namespace ringmaster::nccl
