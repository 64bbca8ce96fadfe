#include "worker-runtime/gpu/gpu_telemetry.h"

namespace ringmaster::gpu {
namespace {

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  return prometheus::MetricFamily{name, help, type, {}};
}

void Add(prometheus::MetricFamily& family, const std::vector<prometheus::ClientMetric::Label>& labels, double value) {
  prometheus::ClientMetric m;
  m.label = labels;
  if (family.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  family.metric.push_back(std::move(m));
}

}  // namespace

StatusOr<std::shared_ptr<GpuTelemetry>> GpuTelemetry::Open(const GpuVisibility& visibility,
                                                           const std::string& library) {
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<Nvml> nvml, Nvml::Open(library));
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<NvmlDevice> all, nvml->Devices());
  if (all.empty()) return NotFoundError("NVML (" + library + ") sees no GPU");
  std::vector<NvmlDevice> visible = VisibleDevices(visibility, all);
  if (visible.empty()) {
    return NotFoundError("none of the " + std::to_string(all.size()) +
                         " GPUs is visible to this process (CUDA_VISIBLE_DEVICES=" +
                         visibility.cuda_visible_devices.value_or("<unset>") +
                         ", NVIDIA_VISIBLE_DEVICES=" + visibility.nvidia_visible_devices.value_or("<unset>") + ")");
  }
  return std::shared_ptr<GpuTelemetry>(new GpuTelemetry(std::move(nvml), std::move(visible)));
}

GpuTelemetry::GpuTelemetry(std::unique_ptr<Nvml> nvml, std::vector<NvmlDevice> devices)
    : nvml_(std::move(nvml)), devices_(std::move(devices)), traffic_(std::make_shared<comm::DeviceTraffic>()) {}

std::string GpuTelemetry::Describe() const {
  std::string s = std::to_string(devices_.size()) + (devices_.size() == 1 ? " GPU (" : " GPUs (");
  for (size_t i = 0; i < devices_.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(i) + ": " + devices_[i].uuid;
  }
  s += ") through " + nvml_->library();
  const std::string driver = nvml_->DriverVersion();
  if (!driver.empty()) s += ", driver " + driver;
  return s;
}

std::vector<prometheus::MetricFamily> GpuTelemetry::Collect() const {
  using prometheus::MetricType;
  auto util = Family("ringmaster_worker_gpu_utilization_ratio",
                     "Fraction of the last sample period a kernel ran on the GPU (NVML).", MetricType::Gauge);
  auto used = Family("ringmaster_worker_gpu_memory_used_bytes", "GPU memory in use, by every process (NVML).",
                     MetricType::Gauge);
  auto total = Family("ringmaster_worker_gpu_memory_total_bytes", "GPU memory in all (NVML).", MetricType::Gauge);
  auto power = Family("ringmaster_worker_gpu_power_watts", "GPU power draw (NVML).", MetricType::Gauge);
  auto nccl = Family("ringmaster_worker_gpu_nccl_bytes_total",
                     "Payload bytes of this worker's NCCL collectives on the GPU (each rank's input buffer).",
                     MetricType::Counter);
  const std::map<int, uint64_t> moved = traffic_->Snapshot();
  for (size_t i = 0; i < devices_.size(); ++i) {
    const std::vector<prometheus::ClientMetric::Label> labels = {{"gpu", std::to_string(i)},
                                                                 {"uuid", devices_[i].uuid}};
    auto it = moved.find(static_cast<int>(i));
    Add(nccl, labels, it == moved.end() ? 0 : static_cast<double>(it->second));
    StatusOr<GpuReading> r = nvml_->Read(devices_[i]);
    if (!r.ok()) continue;
    Add(util, labels, r->utilization);
    Add(used, labels, static_cast<double>(r->memory_used_bytes));
    Add(total, labels, static_cast<double>(r->memory_total_bytes));
    if (r->power_watts) Add(power, labels, *r->power_watts);
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* f : {&util, &used, &total, &power, &nccl}) {
    if (!f->metric.empty()) out.push_back(std::move(*f));
  }
  return out;
}

std::shared_ptr<GpuTelemetry> OpenGpuTelemetry(const GpuVisibility& visibility, const LogSink& log,
                                               const std::string& library) {
  StatusOr<std::shared_ptr<GpuTelemetry>> t = GpuTelemetry::Open(visibility, library);
  if (!t.ok()) {
    std::string why = t.status().message();
    if (t.status().code() == StatusCode::kNotFound && why.rfind("cannot load", 0) == 0) {
      why += " (no NVIDIA driver on this machine)";
    }
    Log(log, LogLevel::kInfo, "GPU telemetry off: " + why);
    return nullptr;
  }
  Log(log, LogLevel::kInfo, "GPU telemetry on: " + (*t)->Describe());
  return std::move(t).value();
}

}  // namespace ringmaster::gpu
