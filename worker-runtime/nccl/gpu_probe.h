// Whether this process can see a GPU, without failing on machines that have
// no CUDA driver at all.
#pragma once

namespace ringmaster::nccl {

// cudaGetDeviceCount(), or 0 when the driver is missing, too old, or reports
// no device. Never fails, never throws.
int VisibleGpuCount();

}  // namespace ringmaster::nccl
