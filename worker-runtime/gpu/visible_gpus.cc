#include "worker-runtime/gpu/visible_gpus.h"

#include <algorithm>
#include <cctype>

namespace ringmaster::gpu {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    out.push_back(Trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// A non-negative decimal index, or nothing.
std::optional<unsigned> Index(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return static_cast<unsigned>(std::stoul(s));
}

// The one device of `from` whose UUID starts with `prefix` ("GPU-..."), or null (none, or ambiguous).
const NvmlDevice* ByUuid(const std::vector<NvmlDevice>& from, const std::string& prefix) {
  if (prefix.rfind("GPU-", 0) != 0) return nullptr;
  const NvmlDevice* found = nullptr;
  for (const auto& d : from) {
    if (d.uuid.rfind(prefix, 0) == 0) {
      if (found) return nullptr;
      found = &d;
    }
  }
  return found;
}

}  // namespace

GpuVisibility GpuVisibility::FromEnvironment(const std::map<std::string, std::string>& env) {
  GpuVisibility v;
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) v.cuda_visible_devices = it->second;
  if (auto it = env.find("NVIDIA_VISIBLE_DEVICES"); it != env.end()) v.nvidia_visible_devices = it->second;
  return v;
}

std::vector<NvmlDevice> VisibleDevices(const GpuVisibility& visibility, const std::vector<NvmlDevice>& all) {
  std::vector<NvmlDevice> exposed = all;
  if (visibility.nvidia_visible_devices) {
    const std::string value = Trim(*visibility.nvidia_visible_devices);
    if (value == "none" || value == "void" || value.empty()) {
      exposed.clear();
    } else if (value != "all") {
      const std::vector<std::string> entries = Split(value);
      const bool isolated = all.size() <= entries.size();  // the container shows only the listed devices
      std::vector<NvmlDevice> chosen;
      for (const auto& entry : entries) {
        const NvmlDevice* d = ByUuid(all, entry);
        if (!d && !isolated) {
          if (auto i = Index(entry)) {
            auto it = std::find_if(all.begin(), all.end(), [&](const NvmlDevice& x) { return x.index == *i; });
            if (it != all.end()) d = &*it;
          }
        }
        if (d && std::none_of(chosen.begin(), chosen.end(), [&](const NvmlDevice& x) { return x.uuid == d->uuid; })) {
          chosen.push_back(*d);
        }
      }
      // Index entries in an isolated container: NVML numbers the exposed devices afresh, so they are all of them.
      if (chosen.empty() && isolated &&
          std::all_of(entries.begin(), entries.end(), [](const std::string& e) { return Index(e).has_value(); })) {
        chosen = all;
      }
      exposed = std::move(chosen);
    }
  }
  if (!visibility.cuda_visible_devices) return exposed;
  std::vector<NvmlDevice> visible;
  const std::string value = Trim(*visibility.cuda_visible_devices);
  if (value.empty()) return visible;
  for (const auto& entry : Split(value)) {
    const NvmlDevice* d = ByUuid(exposed, entry);
    if (!d) {
      if (auto i = Index(entry); i && *i < exposed.size()) d = &exposed[*i];
    }
    // CUDA stops at an entry that names no device, and refuses a device listed twice.
    if (!d || std::any_of(visible.begin(), visible.end(), [&](const NvmlDevice& x) { return x.uuid == d->uuid; }))
      break;
    visible.push_back(*d);
  }
  return visible;
}

}  // namespace ringmaster::gpu
