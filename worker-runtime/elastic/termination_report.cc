#include "worker-runtime/elastic/termination_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "api/names.h"
#include "worker-runtime/gpu/nvml.h"

namespace ringmaster::elastic {
namespace {

std::string Lookup(const std::map<std::string, std::string>& env, std::string_view name) {
  auto it = env.find(std::string(name));
  return it == env.end() ? "" : it->second;
}

}  // namespace

std::string NodeFromEnvironment(const std::map<std::string, std::string>& env) {
  std::string node = Lookup(env, api::env::kNodeName);
  return node.empty() ? Lookup(env, "NODE_NAME") : node;
}

std::string TerminationLogPath(const std::map<std::string, std::string>& env) {
  std::string path = Lookup(env, api::env::kTerminationLog);
  return path.empty() ? std::string(api::kDefaultTerminationLogPath) : path;
}

std::string DescribeGpu(int device, const gpu::GpuVisibility& visibility) {
  if (device < 0) return "";
  std::string gpu = std::to_string(device);
  // The physical GPU, by NVML's UUID: a node's operator finds the card by it. No NVML (no driver, the
  // emulation): the index alone.
  auto nvml = gpu::Nvml::Open();
  if (!nvml.ok()) return gpu;
  auto all = (*nvml)->Devices();
  if (!all.ok()) return gpu;
  const std::vector<gpu::NvmlDevice> visible = gpu::VisibleDevices(visibility, *all);
  if (static_cast<size_t>(device) < visible.size() && !visible[device].uuid.empty())
    gpu += " (" + visible[device].uuid + ")";
  return gpu;
}

StatusOr<std::string> WriteTerminationMessage(const std::string& path, const api::WorkerTermination& t) {
  const std::string message = api::FormatTerminationMessage(t);
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return UnavailableError("cannot write the termination message to " + path + ": " + std::strerror(errno));
  const bool written = std::fwrite(message.data(), 1, message.size(), f) == message.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) return UnavailableError("cannot write the termination message to " + path);
  return message;
}

}  // namespace ringmaster::elastic
