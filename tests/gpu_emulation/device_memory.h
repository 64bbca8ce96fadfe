// The emulated GPUs' memory and the calling thread's current device.
//
// "Device memory" is host memory from a process-wide registry, tagged with the device that was
// current when cudaMalloc made it. The registry is an ordered map base -> {size, extent, device}, so
// an interior pointer resolves to its allocation (cudaPointerGetAttributes, the memcpy kind checks,
// and NCCL's CudaPtrCheck use it). As on a GPU, where cudaMalloc hands out whole granules, the
// address just past the requested size still belongs to the allocation (the extent is rounded up
// past it): an empty slice at the end of a buffer is device memory.
//
// Thread-safety: the registry is safe from any thread; the current device is per thread, as CUDA's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tests/gpu_emulation/api_headers.h"

namespace gpuemu {

// The visible emulated devices (settings.h) and the emulated GPU behind a visible index.
int DeviceCount();
int PhysicalDevice(int device);

// cudaErrorNoDevice when there is no emulated GPU, else cudaSuccess.
cudaError_t CheckDevices();

// The calling thread's current device (cudaSetDevice/cudaGetDevice); 0 until set.
int CurrentDevice();
void SetCurrentDevice(int device);

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;    // as requested: the bounds of copies and collectives
  size_t extent = 0;  // what the address range holds (> size): what pointer queries resolve
  int device = -1;
};

// cudaMalloc / cudaFree on the registry. Release of a pointer that is not the base of an
// allocation: cudaErrorInvalidValue.
cudaError_t Allocate(size_t bytes, int device, void** out);
cudaError_t Release(void* ptr);

// The allocation holding ptr (base <= ptr < base + extent); false for any other pointer.
bool Lookup(const void* ptr, Allocation* out);

}  // namespace gpuemu
