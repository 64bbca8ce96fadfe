// The CUDA runtime entry points (cuda_runtime_api.h) of the emulation: devices, memory, streams,
// events. Each returns the cudaError_t the real runtime returns in the same situation and records
// failures as the thread's last error (cudaGetLastError).
//
// cuda_runtime_api.h renames the stream-ordered calls to *_ptds / *_ptsz when a program is built
// with CUDA_API_PER_THREAD_DEFAULT_STREAM; those names are exported too (at the end), with the
// per-thread default stream emulated by the device's legacy default stream (see README.md).
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/cuda_errors.h"
#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/settings.h"
#include "tests/gpu_emulation/streams.h"

using namespace gpuemu;

namespace {

cudaError_t Fail(cudaError_t e) { return RecordCudaError(e); }

// as the runtime's copy checks: the kind must agree with where src and dst live; every byte must
// lie inside its allocation.
cudaError_t CheckCopy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  Allocation d, s;
  const bool dst_dev = Lookup(dst, &d), src_dev = Lookup(src, &s);
  if (dst_dev && reinterpret_cast<uintptr_t>(dst) + count > d.base + d.size) return cudaErrorInvalidValue;
  if (src_dev && reinterpret_cast<uintptr_t>(src) + count > s.base + s.size) return cudaErrorInvalidValue;
  bool ok = false;
  switch (kind) {
    case cudaMemcpyHostToHost: ok = !src_dev && !dst_dev; break;
    case cudaMemcpyHostToDevice: ok = !src_dev && dst_dev; break;
    case cudaMemcpyDeviceToHost: ok = src_dev && !dst_dev; break;
    case cudaMemcpyDeviceToDevice: ok = src_dev && dst_dev; break;
    case cudaMemcpyDefault: ok = true; break;  // inferred from the pointers (unified addressing)
    default: return cudaErrorInvalidMemcpyDirection;
  }
  return ok ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t CheckSet(void* ptr, size_t count) {
  if (count == 0) return cudaSuccess;
  Allocation a;
  if (!Lookup(ptr, &a) || reinterpret_cast<uintptr_t>(ptr) + count > a.base + a.size) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t MemcpyOn(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t handle, bool wait) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  if (cudaError_t e = CheckCopy(dst, src, count, kind); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Stream> stream;
  if (cudaError_t e = ResolveStream(handle, CurrentDevice(), &stream); e != cudaSuccess) return Fail(e);
  Allocation a;
  const bool pageable_to_device = count > 0 && !Lookup(src, &a) && Lookup(dst, &a);
  const int late_ms = GetSettings().async_pageable_ms;
  if (pageable_to_device && late_ms > 0) {
    // RINGMASTER_EMULATED_CUDA_ASYNC_PAGEABLE: as the runtime's copies from pageable memory (CUDA's "API
    // synchronization behavior"): the source is staged at the call, so the caller may reuse it at once, but
    // the DMA to the destination may land after the call returns -- cudaMemcpy included.
    auto staged = std::shared_ptr<char[]>(new char[count]);
    std::memcpy(staged.get(), src, count);
    stream->Enqueue([dst, staged, count, late_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
      std::memcpy(dst, staged.get(), count);
    });
    return cudaSuccess;
  }
  if (count > 0) stream->Enqueue([dst, src, count] { std::memmove(dst, src, count); });
  if (wait) stream->Synchronize();  // cudaMemcpy: ordered on the legacy stream, returns when done
  return cudaSuccess;
}

cudaError_t MemsetOn(void* ptr, int value, size_t count, cudaStream_t handle, bool wait) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  if (cudaError_t e = CheckSet(ptr, count); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Stream> stream;
  if (cudaError_t e = ResolveStream(handle, CurrentDevice(), &stream); e != cudaSuccess) return Fail(e);
  if (count > 0) stream->Enqueue([ptr, value, count] { std::memset(ptr, value, count); });
  if (wait) stream->Synchronize();
  return cudaSuccess;
}

cudaError_t StreamQuery(cudaStream_t handle) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Stream> stream;
  if (cudaError_t e = ResolveStream(handle, CurrentDevice(), &stream); e != cudaSuccess) return Fail(e);
  if (cudaError_t e = StickyError(stream->device()); e != cudaSuccess) return Fail(e);
  return stream->Idle() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t StreamSynchronize(cudaStream_t handle) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Stream> stream;
  if (cudaError_t e = ResolveStream(handle, CurrentDevice(), &stream); e != cudaSuccess) return Fail(e);
  stream->Synchronize();
  return Fail(StickyError(stream->device()));
}

cudaError_t StreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned flags) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  if (flags != cudaEventWaitDefault && flags != cudaEventWaitExternal) return Fail(cudaErrorInvalidValue);
  std::shared_ptr<Stream> stream;
  if (cudaError_t e = ResolveStream(handle, CurrentDevice(), &stream); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Completion> point;
  if (cudaError_t e = WithEvent(event, [&](EventState& ev) { point = ev.last; }); e != cudaSuccess) return Fail(e);
  // an event never recorded: nothing to wait for
  if (point) stream->Enqueue([point] { point->Wait(); });
  return cudaSuccess;
}

cudaError_t EventRecord(cudaEvent_t event, cudaStream_t handle) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Stream> stream;
  if (cudaError_t e = ResolveStream(handle, CurrentDevice(), &stream); e != cudaSuccess) return Fail(e);
  cudaError_t mismatch = cudaSuccess;
  cudaError_t e = WithEvent(event, [&](EventState& ev) {
    if (ev.device != stream->device()) {
      mismatch = cudaErrorInvalidResourceHandle;  // event and stream of different devices
      return;
    }
    ev.last = stream->Mark();
  });
  if (e != cudaSuccess) return Fail(e);
  return Fail(mismatch);
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Fail(cudaErrorInvalidValue);
  *count = DeviceCount();
  return *count > 0 ? cudaSuccess : Fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
  if (cudaError_t e = CheckDevices(); e != cudaSuccess) return Fail(e);
  if (device < 0 || device >= DeviceCount()) return Fail(cudaErrorInvalidDevice);
  SetCurrentDevice(device);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Fail(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevices(); e != cudaSuccess) return Fail(e);
  *device = CurrentDevice();
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t error) { return CudaErrorName(error); }
const char* cudaGetErrorString(cudaError_t error) { return CudaErrorString(error); }
// A sticky error is never reset (cudaGetLastError keeps answering it).
cudaError_t cudaGetLastError(void) {
  if (cudaError_t e = StickyError(CurrentDevice()); e != cudaSuccess) return e;
  return TakeLastCudaError();
}
cudaError_t cudaPeekAtLastError(void) {
  if (cudaError_t e = StickyError(CurrentDevice()); e != cudaSuccess) return e;
  return PeekLastCudaError();
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return Fail(cudaErrorInvalidValue);
  *driverVersion = 13000;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return Fail(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  if (devPtr == nullptr) return Fail(cudaErrorInvalidValue);
  return Fail(Allocate(size, CurrentDevice(), devPtr));
}

cudaError_t cudaFree(void* devPtr) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  if (devPtr == nullptr) return cudaSuccess;  // (NCCL calls cudaFree(NULL) to initialise the runtime)
  return Fail(Release(devPtr));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return MemcpyOn(dst, src, count, kind, nullptr, /*wait=*/true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return MemcpyOn(dst, src, count, kind, stream, /*wait=*/false);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return MemsetOn(devPtr, value, count, nullptr, /*wait=*/true);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return MemsetOn(devPtr, value, count, stream, /*wait=*/false);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  if (pStream == nullptr || (flags != cudaStreamDefault && flags != cudaStreamNonBlocking)) {
    return Fail(cudaErrorInvalidValue);
  }
  return Fail(CreateStream(CurrentDevice(), flags, pStream));
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) { return cudaStreamCreateWithFlags(pStream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  return Fail(DestroyStream(stream));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return StreamQuery(stream); }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return StreamSynchronize(stream); }
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return StreamWaitEvent(stream, event, flags);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (event == nullptr || (flags & ~known) != 0 ||
      ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))) {
    return Fail(cudaErrorInvalidValue);
  }
  return Fail(CreateEvent(CurrentDevice(), flags, event));
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { return EventRecord(event, stream); }

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Completion> point;
  if (cudaError_t e = WithEvent(event, [&](EventState& ev) { point = ev.last; }); e != cudaSuccess) return Fail(e);
  return !point || point->IsSet() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  std::shared_ptr<Completion> point;
  if (cudaError_t e = WithEvent(event, [&](EventState& ev) { point = ev.last; }); e != cudaSuccess) return Fail(e);
  if (point) point->Wait();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  return Fail(DestroyEvent(event));
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = CheckCurrentDevice(); e != cudaSuccess) return Fail(e);
  std::vector<std::shared_ptr<Stream>> streams;
  StreamsOfDevice(CurrentDevice(), &streams);
  for (auto& s : streams) s->Synchronize();
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return Fail(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  Allocation a;
  if (Lookup(ptr, &a)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = a.device;
    attributes->devicePointer = const_cast<void*>(ptr);
    attributes->hostPointer = nullptr;
  } else {  // as CUDA 11+: host memory that CUDA does not know is "unregistered", and no error
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    attributes->devicePointer = nullptr;
    attributes->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

// The per-thread-default-stream names (CUDA_API_PER_THREAD_DEFAULT_STREAM), not declared by the
// header without that macro.
__attribute__((visibility("default"))) cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                                                   enum cudaMemcpyKind kind) {
  return cudaMemcpy(dst, src, count, kind);
}
__attribute__((visibility("default"))) cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return cudaMemset(devPtr, value, count);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count,
                                                                        enum cudaMemcpyKind kind, cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, count, kind, stream);
}
__attribute__((visibility("default"))) cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count,
                                                                        cudaStream_t stream) {
  return cudaMemsetAsync(devPtr, value, count, stream);
}
__attribute__((visibility("default"))) cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  return StreamQuery(stream);
}
__attribute__((visibility("default"))) cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return StreamSynchronize(stream);
}
__attribute__((visibility("default"))) cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                                                            unsigned int flags) {
  return StreamWaitEvent(stream, event, flags);
}
__attribute__((visibility("default"))) cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return EventRecord(event, stream);
}

}  // extern "C"
