// The emulated GPUs' memory and the calling thread's current device.
//
// "Device memory" is host memory from a process-wide registry, tagged with the device that was
// current when cudaMalloc made it. The registry is an ordered map base -> {size, extent, device}, so
// an interior pointer resolves to its allocation (cudaPointerGetAttributes, the memcpy kind checks,
// and NCCL's CudaPtrCheck use it). As on a GPU, only [base, base + size) belongs to the allocation:
// on an H200 (driver 580, CUDA 13.0) cudaPointerGetAttributes of the address just past a 24-byte
// cudaMalloc said "unregistered", though the driver hands out whole granules -- so an empty slice at
// the end of a buffer is not device memory, and a caller must not ask about it.
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

// A device's sticky error (a kernel's fault: cudaErrorIllegalAddress): once set, every CUDA call on that
// device in this process returns it, as the CUDA context is unusable until the process exits.
// cudaSuccess while none. Per visible device index; out-of-range devices have none.
cudaError_t StickyError(int device);
void SetStickyError(int device, cudaError_t e);
// CheckDevices(), then the current device's sticky error.
cudaError_t CheckCurrentDevice();

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;    // as requested: the bounds of copies and collectives
  size_t extent = 0;  // what the host allocation holds (> size, a multiple of the alignment)
  int device = -1;
};

// cudaMalloc / cudaFree on the registry. Release of a pointer that is not the base of an
// allocation: cudaErrorInvalidValue.
cudaError_t Allocate(size_t bytes, int device, void** out);
cudaError_t Release(void* ptr);

// The allocation holding ptr (base <= ptr < base + size); false for any other pointer.
bool Lookup(const void* ptr, Allocation* out);

}  // namespace gpuemu
