// A stand-in for NVIDIA's libnvidia-ml.so.1, built as a shared library for the tests of gpu/: it exports
// the NVML entry points Nvml resolves, with NVML's C signatures (see nvml.h), so a test exercises the real
// dlopen/dlsym path and everything after it. What it reports is set through fake_nvml_configure (the test
// dlopens the same library and resolves it). Like a driver, it holds its devices in the library's own
// state: one configuration per process, guarded by a mutex. Built twice: once whole, and once without
// nvmlDeviceGetMemoryInfo (FAKE_NVML_WITHOUT_MEMORY_INFO), for the "missing entry point" case.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

extern "C" {

// One fake GPU. *_result: the nvmlReturn_t the call returns (0 = success).
struct FakeNvmlGpu {
  const char* uuid;
  unsigned index;
  unsigned utilization_percent;
  unsigned long long memory_used, memory_total;
  unsigned milliwatts;
  int power_result;  // e.g. 3 (NVML_ERROR_NOT_SUPPORTED)
  int read_result;   // returned by the utilization and memory calls, e.g. 15 (NVML_ERROR_GPU_IS_LOST)
};

}  // extern "C"

namespace {

struct Gpu {
  std::string uuid;
  FakeNvmlGpu values;
};

struct State {
  std::mutex mu;
  int init_result = 0;
  int initialized = 0;  // nvmlInit_v2 calls not yet shut down
  std::vector<Gpu> gpus;
};

State& state() {
  static State s;
  return s;
}

// Device handles are 1-based positions, never dereferenced by the caller.
Gpu* Find(void* handle) {
  auto i = reinterpret_cast<uintptr_t>(handle);
  auto& gpus = state().gpus;
  return i >= 1 && i <= gpus.size() ? &gpus[i - 1] : nullptr;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fake_nvml_configure(int init_result, const FakeNvmlGpu* gpus, unsigned n) {
  std::lock_guard lock(state().mu);
  state().init_result = init_result;
  state().gpus.clear();
  for (unsigned i = 0; i < n; ++i) state().gpus.push_back({gpus[i].uuid, gpus[i]});
}

__attribute__((visibility("default"))) int fake_nvml_initialized() {
  std::lock_guard lock(state().mu);
  return state().initialized;
}

__attribute__((visibility("default"))) int nvmlInit_v2() {
  std::lock_guard lock(state().mu);
  if (state().init_result == 0) ++state().initialized;
  return state().init_result;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  std::lock_guard lock(state().mu);
  --state().initialized;
  return 0;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int result) {
  switch (result) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}

__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::snprintf(version, length, "%s", "999.1.2-fake");
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard lock(state().mu);
  *count = static_cast<unsigned>(state().gpus.size());
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  std::lock_guard lock(state().mu);
  if (index >= state().gpus.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = reinterpret_cast<void*>(static_cast<uintptr_t>(index) + 1);
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetIndex(void* device, unsigned* index) {
  std::lock_guard lock(state().mu);
  Gpu* g = Find(device);
  if (!g) return 2;
  *index = g->values.index;
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  std::lock_guard lock(state().mu);
  Gpu* g = Find(device);
  if (!g) return 2;
  if (g->uuid.size() + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::memcpy(uuid, g->uuid.c_str(), g->uuid.size() + 1);
  return 0;
}

struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};

__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void* device, Utilization* u) {
  std::lock_guard lock(state().mu);
  Gpu* g = Find(device);
  if (!g) return 2;
  if (g->values.read_result != 0) return g->values.read_result;
  u->gpu = g->values.utilization_percent;
  u->memory = 0;
  return 0;
}

#ifndef FAKE_NVML_WITHOUT_MEMORY_INFO
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* device, Memory* m) {
  std::lock_guard lock(state().mu);
  Gpu* g = Find(device);
  if (!g) return 2;
  if (g->values.read_result != 0) return g->values.read_result;
  m->total = g->values.memory_total;
  m->used = g->values.memory_used;
  m->free = m->total - m->used;
  return 0;
}
#endif

__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* device, unsigned* milliwatts) {
  std::lock_guard lock(state().mu);
  Gpu* g = Find(device);
  if (!g) return 2;
  if (g->values.power_result != 0) return g->values.power_result;
  *milliwatts = g->values.milliwatts;
  return 0;
}

}  // extern "C"
