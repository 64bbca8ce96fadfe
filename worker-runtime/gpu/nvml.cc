#include "worker-runtime/gpu/nvml.h"

#include <dlfcn.h>

#include <algorithm>

namespace ringmaster::gpu {
namespace {

// NVML's ABI (see nvml.h): the return code is a C enum, devices are opaque pointers.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr unsigned kUuidBufferSize = 96;     // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
struct nvmlUtilization_t {
  unsigned int gpu;     // percent of the sample period a kernel ran
  unsigned int memory;  // percent of the sample period device memory was read or written
};
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*driver_version)(char*, unsigned);
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*);
};

StatusOr<std::unique_ptr<Nvml>> Nvml::Open(const std::string& library) {
  dlerror();
  void* dl = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char* why = dlerror();
    return NotFoundError("cannot load " + library + ": " + (why ? why : "dlopen failed"));
  }
  auto api = std::make_unique<Api>();
  struct Entry {
    const char* name;
    void** slot;
  };
  const Entry entries[] = {
      {"nvmlInit_v2", reinterpret_cast<void**>(&api->init)},
      {"nvmlShutdown", reinterpret_cast<void**>(&api->shutdown)},
      {"nvmlErrorString", reinterpret_cast<void**>(&api->error_string)},
      {"nvmlSystemGetDriverVersion", reinterpret_cast<void**>(&api->driver_version)},
      {"nvmlDeviceGetCount_v2", reinterpret_cast<void**>(&api->count)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<void**>(&api->handle_by_index)},
      {"nvmlDeviceGetIndex", reinterpret_cast<void**>(&api->index)},
      {"nvmlDeviceGetUUID", reinterpret_cast<void**>(&api->uuid)},
      {"nvmlDeviceGetUtilizationRates", reinterpret_cast<void**>(&api->utilization)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void**>(&api->memory)},
      {"nvmlDeviceGetPowerUsage", reinterpret_cast<void**>(&api->power)},
  };
  for (const Entry& e : entries) {
    *e.slot = dlsym(dl, e.name);
    if (!*e.slot) {
      dlclose(dl);
      return FailedPreconditionError(library + " has no " + e.name + " (not NVIDIA's management library, or too old)");
    }
  }
  if (nvmlReturn_t r = api->init(); r != kSuccess) {
    const char* text = api->error_string(r);
    Status s = UnavailableError("nvmlInit_v2 failed: " + std::string(text ? text : "error " + std::to_string(r)));
    dlclose(dl);
    return s;
  }
  return std::unique_ptr<Nvml>(new Nvml(library, dl, std::move(api)));
}

Nvml::Nvml(std::string library, void* dl, std::unique_ptr<Api> api)
    : library_(std::move(library)), dl_(dl), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(dl_);
}

Status Nvml::Error(const char* call, int result) const {
  const char* text = api_->error_string(result);
  return UnavailableError(std::string(call) + ": " + (text ? text : "error " + std::to_string(result)));
}

std::string Nvml::DriverVersion() const {
  char buf[kVersionBufferSize] = {};
  if (api_->driver_version(buf, sizeof(buf)) != kSuccess) return "";
  buf[sizeof(buf) - 1] = '\0';
  return buf;
}

StatusOr<std::vector<NvmlDevice>> Nvml::Devices() const {
  unsigned count = 0;
  if (nvmlReturn_t r = api_->count(&count); r != kSuccess) return Error("nvmlDeviceGetCount_v2", r);
  std::vector<NvmlDevice> devices;
  for (unsigned i = 0; i < count; ++i) {
    NvmlDevice d;
    nvmlDevice_t handle = nullptr;
    if (nvmlReturn_t r = api_->handle_by_index(i, &handle); r != kSuccess) {
      return Error("nvmlDeviceGetHandleByIndex_v2", r).WithContext("device " + std::to_string(i));
    }
    d.handle = handle;
    if (nvmlReturn_t r = api_->index(handle, &d.index); r != kSuccess) {
      return Error("nvmlDeviceGetIndex", r).WithContext("device " + std::to_string(i));
    }
    char uuid[kUuidBufferSize] = {};
    if (nvmlReturn_t r = api_->uuid(handle, uuid, sizeof(uuid)); r != kSuccess) {
      return Error("nvmlDeviceGetUUID", r).WithContext("device " + std::to_string(i));
    }
    uuid[sizeof(uuid) - 1] = '\0';
    d.uuid = uuid;
    devices.push_back(std::move(d));
  }
  return devices;
}

StatusOr<GpuReading> Nvml::Read(const NvmlDevice& device) const {
  GpuReading reading;
  nvmlUtilization_t util{};
  if (nvmlReturn_t r = api_->utilization(device.handle, &util); r != kSuccess) {
    return Error("nvmlDeviceGetUtilizationRates", r);
  }
  reading.utilization = std::min(util.gpu, 100u) / 100.0;
  nvmlMemory_t mem{};
  if (nvmlReturn_t r = api_->memory(device.handle, &mem); r != kSuccess) return Error("nvmlDeviceGetMemoryInfo", r);
  reading.memory_used_bytes = mem.used;
  reading.memory_total_bytes = mem.total;
  unsigned milliwatts = 0;
  nvmlReturn_t r = api_->power(device.handle, &milliwatts);
  if (r == kSuccess) {
    reading.power_watts = milliwatts / 1000.0;
  } else if (r != kNotSupported) {
    return Error("nvmlDeviceGetPowerUsage", r);
  }
  return reading;
}

}  // namespace ringmaster::gpu
