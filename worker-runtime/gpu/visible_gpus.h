// Which of the machine's GPUs this process uses, in the order CUDA numbers them (the process's device 0,
// 1, ...), from the variables that choose them:
//   CUDA_VISIBLE_DEVICES    the CUDA runtime's own choice: comma-separated indices or UUIDs ("GPU-..."; a
//                           unique prefix is enough). CUDA's rules: set but empty means none, and an entry
//                           that names no device ends the list. Indices are taken as NVML's (PCI bus order),
//                           which is CUDA's order with CUDA_DEVICE_ORDER=PCI_BUS_ID (and on machines of one
//                           GPU model).
//   NVIDIA_VISIBLE_DEVICES  the container runtime's choice, as the NVIDIA device plugin sets it for a pod
//                           ("all", "none"/"void", or indices / UUIDs). Inside the container NVML already sees
//                           only these; applied here too, by UUID (or by index where NVML shows more devices
//                           than the list names: the variable is set but the process is not isolated).
// CUDA_VISIBLE_DEVICES applies on top of NVIDIA_VISIBLE_DEVICES (its indices number the devices that one
// leaves). Neither set: every device NVML sees. MIG instances ("MIG-..." entries) are not matched.
//
// Thread-safety: values and pure functions. Errors: none (what names nothing is left out).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "worker-runtime/gpu/nvml.h"

namespace ringmaster::gpu {

struct GpuVisibility {
  std::optional<std::string> cuda_visible_devices;    // CUDA_VISIBLE_DEVICES, when set
  std::optional<std::string> nvidia_visible_devices;  // NVIDIA_VISIBLE_DEVICES, when set

  static GpuVisibility FromEnvironment(const std::map<std::string, std::string>& env);
};

// The devices of `all` (NVML's, in index order) this process uses, in its CUDA order.
std::vector<NvmlDevice> VisibleDevices(const GpuVisibility& visibility, const std::vector<NvmlDevice>& all);

}  // namespace ringmaster::gpu
