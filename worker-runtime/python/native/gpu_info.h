// ringmaster._native.nccl_info() and cuda_info(): which NCCL and which CUDA runtime this process loaded
// (worker-runtime/nccl/gpu_libraries.h decides: the emulation, the copy already loaded, torch's wheel, a
// configured path), and what that NCCL can do. Loading happens on the first call, as for a collective; a
// library that cannot be loaded is reported in the dict ({"error": ...}), never raised, so a diagnostic
// works on any machine.
#pragma once

#include <nanobind/nanobind.h>

namespace ringmaster::python {

// {"version": "2.21.5", "version_code": 22105, "path": ..., "shrink": bool, "revoke": bool, "grow": bool,
//  "emulated": bool}, or {"error": "..."} when no NCCL could be loaded.
nanobind::dict NcclInfo();

// {"path": ..., "emulated": bool, "device_count": int} ("device_error": the CUDA error instead of
// device_count when CUDA reports none: no driver, no device), or {"error": "..."} when no CUDA runtime
// could be loaded.
nanobind::dict CudaInfo();

}  // namespace ringmaster::python
