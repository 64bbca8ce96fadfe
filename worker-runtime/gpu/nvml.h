// Nvml: the few calls of NVIDIA's management library (NVML) that GPU telemetry needs, reached through
// dlopen/dlsym of the driver's libnvidia-ml.so.1 — nothing links it, so a binary built here runs on a
// machine without an NVIDIA driver, where Open() simply fails. No NVML header is used: the types and the
// entry points below are declared here as NVML's stable C ABI defines them (nvml.h of the CUDA toolkit /
// the GPU Deployment Kit, unchanged since the _v2 entry points of NVML 5.319):
//   nvmlReturn_t nvmlInit_v2(void); nvmlReturn_t nvmlShutdown(void); const char* nvmlErrorString(nvmlReturn_t);
//   nvmlReturn_t nvmlSystemGetDriverVersion(char*, unsigned int);
//   nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int*);
//   nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t*);
//   nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t, unsigned int*);
//   nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t, char*, unsigned int);
//   nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t*);   // {gpu, memory}: percent
//   nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);              // {total, free, used}: bytes
//   nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int*);              // milliwatts
// where nvmlReturn_t is a C enum (int; NVML_SUCCESS = 0, NVML_ERROR_NOT_SUPPORTED = 3) and nvmlDevice_t
// an opaque pointer.
//
// Ownership: an Nvml owns its library handle and its nvmlInit; the destructor calls nvmlShutdown and
// dlclose. Devices are valid while their Nvml lives.
// Thread-safety: NVML is thread-safe, and so is every const method here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::gpu {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// One GPU as NVML numbers it on this machine (in a container: those the container runtime exposes).
struct NvmlDevice {
  unsigned index = 0;      // NVML's index (PCI bus order)
  std::string uuid;        // "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
  void* handle = nullptr;  // nvmlDevice_t
};

// One reading of a device.
struct GpuReading {
  double utilization = 0;  // fraction of the last sample period a kernel ran, 0..1
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
  std::optional<double> power_watts;  // absent when the device does not report power (NOT_SUPPORTED)
};

class Nvml {
 public:
  // Loads `library` (a name the dynamic linker searches for, or a path), resolves the entry points and
  // calls nvmlInit_v2. Errors: NotFound when the library cannot be loaded (dlerror's text: no NVIDIA driver
  // on this machine), FailedPrecondition naming the first entry point it lacks, Unavailable when nvmlInit_v2
  // fails (with nvmlErrorString's text, e.g. "Driver Not Loaded").
  static StatusOr<std::unique_ptr<Nvml>> Open(const std::string& library = kNvmlLibrary);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The library as opened, and the driver's version ("550.54.15"; empty when NVML does not say).
  const std::string& library() const { return library_; }
  std::string DriverVersion() const;

  // Every device NVML sees, in index order. Errors: Unavailable naming the call that failed.
  StatusOr<std::vector<NvmlDevice>> Devices() const;

  // Utilization, memory and power of `device` now. Errors: Unavailable naming the call and NVML's error
  // (e.g. "GPU is lost"); a device without power readings is no error (power_watts is empty).
  StatusOr<GpuReading> Read(const NvmlDevice& device) const;

  struct Api;  // the resolved entry points (nvml.cc)

 private:
  Nvml(std::string library, void* dl, std::unique_ptr<Api> api);
  // "<call>: <nvmlErrorString>".
  Status Error(const char* call, int result) const;

  // Constant after construction.
  const std::string library_;
  void* const dl_;
  const std::unique_ptr<Api> api_;
};

}  // namespace ringmaster::gpu
