// GpuTelemetry: the worker's GPUs as Prometheus series, read through NVML when Prometheus scrapes (a
// prometheus::Collectable beside the worker's registry), one series per visible GPU (visible_gpus.h):
//
//   ringmaster_worker_gpu_utilization_ratio{gpu,uuid}    gauge: fraction of the last sample period a kernel ran
//   ringmaster_worker_gpu_memory_used_bytes{gpu,uuid}    gauge
//   ringmaster_worker_gpu_memory_total_bytes{gpu,uuid}   gauge
//   ringmaster_worker_gpu_power_watts{gpu,uuid}          gauge: absent for a GPU that does not report power
//   ringmaster_worker_gpu_nccl_bytes_total{gpu,uuid}     counter: NCCL collective payload through this GPU
//                                                        (comm::DeviceTraffic), 0 until the first
//
// `gpu` is the device number the process uses (CUDA's ordinal: cuda:N, NcclOptions::device), `uuid` NVML's
// UUID of the physical GPU. A GPU whose reading fails at a scrape (e.g. "GPU is lost") has no gauges in that
// scrape; its NCCL counter stays. On a machine without NVIDIA's driver there is no GpuTelemetry at all, so
// none of these series exist (OpenGpuTelemetry).
//
// Thread-safety: Collect() may run on any thread, concurrently. Ownership: owns its Nvml; shares the
// DeviceTraffic with the runtimes that count into it.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/status.h"
#include "worker-runtime/comm/device_traffic.h"
#include "worker-runtime/gpu/nvml.h"
#include "worker-runtime/gpu/visible_gpus.h"

namespace ringmaster::gpu {

class GpuTelemetry : public prometheus::Collectable {
 public:
  // Opens `library` (Nvml::Open) and picks the visible devices. Errors: those of Nvml::Open and
  // Nvml::Devices; NotFound when no GPU is visible (NVML sees none, or the variables leave none).
  static StatusOr<std::shared_ptr<GpuTelemetry>> Open(const GpuVisibility& visibility,
                                                      const std::string& library = kNvmlLibrary);

  std::vector<prometheus::MetricFamily> Collect() const override;

  // The counter the NCCL communicators add to (RuntimeConfig::gpu_traffic). Never null.
  const std::shared_ptr<comm::DeviceTraffic>& traffic() const { return traffic_; }
  // The visible GPUs, by CUDA ordinal.
  const std::vector<NvmlDevice>& devices() const { return devices_; }
  // "2 GPUs (0: GPU-..., 1: GPU-...) through libnvidia-ml.so.1, driver 550.54.15".
  std::string Describe() const;

 private:
  GpuTelemetry(std::unique_ptr<Nvml> nvml, std::vector<NvmlDevice> devices);

  // Constant after construction.
  const std::unique_ptr<Nvml> nvml_;
  const std::vector<NvmlDevice> devices_;
  const std::shared_ptr<comm::DeviceTraffic> traffic_;
};

// GpuTelemetry::Open, logged in exactly one line: "GPU telemetry on: <Describe()>" (info), or "GPU telemetry
// off: <why>" (info; e.g. "cannot load libnvidia-ml.so.1: ... (no NVIDIA driver on this machine)"), and null.
std::shared_ptr<GpuTelemetry> OpenGpuTelemetry(const GpuVisibility& visibility, const LogSink& log,
                                               const std::string& library = kNvmlLibrary);

}  // namespace ringmaster::gpu
