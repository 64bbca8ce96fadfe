#include "tests/gpu_emulation/device_memory.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "tests/gpu_emulation/settings.h"

namespace gpuemu {
namespace {

thread_local int current_device = 0;

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Allocation> allocations;
};

Registry& Memory() {
  static Registry* registry = new Registry;  // never freed: stream workers may touch it at exit
  return *registry;
}

constexpr size_t kAlignment = 256;  // cudaMalloc's alignment

constexpr int kMaxDevices = 64;
std::atomic<int>* Sticky() {
  static auto* sticky = new std::atomic<int>[kMaxDevices]();  // never freed, as the registry
  return sticky;
}

}  // namespace

int DeviceCount() { return static_cast<int>(GetSettings().visible.size()); }

int PhysicalDevice(int device) {
  const auto& visible = GetSettings().visible;
  return device >= 0 && device < static_cast<int>(visible.size()) ? visible[device] : -1;
}

cudaError_t CheckDevices() { return DeviceCount() > 0 ? cudaSuccess : cudaErrorNoDevice; }

cudaError_t StickyError(int device) {
  if (device < 0 || device >= kMaxDevices) return cudaSuccess;
  return static_cast<cudaError_t>(Sticky()[device].load());
}

void SetStickyError(int device, cudaError_t e) {
  if (device >= 0 && device < kMaxDevices) Sticky()[device].store(e);
}

cudaError_t CheckCurrentDevice() {
  if (cudaError_t e = CheckDevices(); e != cudaSuccess) return e;
  return StickyError(CurrentDevice());
}

int CurrentDevice() { return current_device; }
void SetCurrentDevice(int device) { current_device = device; }

cudaError_t Allocate(size_t bytes, int device, void** out) {
  if (bytes == 0) {  // as cudaMalloc: success, and no allocation
    *out = nullptr;
    return cudaSuccess;
  }
  const size_t extent = (bytes / kAlignment + 1) * kAlignment;  // a multiple of kAlignment, as aligned_alloc needs
  void* p = std::aligned_alloc(kAlignment, extent);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  Registry& r = Memory();
  std::lock_guard<std::mutex> lock(r.mu);
  r.allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{reinterpret_cast<uintptr_t>(p), bytes, extent, device};
  *out = p;
  return cudaSuccess;
}

cudaError_t Release(void* ptr) {
  Registry& r = Memory();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.allocations.end()) return cudaErrorInvalidValue;
    r.allocations.erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}

bool Lookup(const void* ptr, Allocation* out) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  Registry& r = Memory();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.allocations.upper_bound(p);
  if (it == r.allocations.begin()) return false;
  --it;
  if (p >= it->second.base + it->second.size) return false;
  *out = it->second;
  return true;
}

}  // namespace gpuemu
