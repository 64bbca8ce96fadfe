#include "tests/gpu_emulation/settings.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "tests/gpu_emulation/api_headers.h"

namespace gpuemu {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int EnvInt(const char* name, int fallback) {
  std::string v = Env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  return end && *end == '\0' ? static_cast<int>(n) : fallback;
}

// As the CUDA runtime reads CUDA_VISIBLE_DEVICES: comma-separated indices, the list ending at the
// first entry that is not a valid, unused index (so "" and "-1" leave no device).
std::vector<int> VisibleDevices(int n) {
  std::vector<int> all;
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) {
    for (int i = 0; i < n; ++i) all.push_back(i);
    return all;
  }
  std::stringstream in(env);
  std::string token;
  while (std::getline(in, token, ',')) {
    size_t b = token.find_first_not_of(" \t"), e = token.find_last_not_of(" \t");
    if (b == std::string::npos) break;
    token = token.substr(b, e - b + 1);
    char* end = nullptr;
    long idx = std::strtol(token.c_str(), &end, 10);
    if (!end || *end != '\0' || idx < 0 || idx >= n) break;
    bool dup = false;
    for (int d : all) dup |= d == idx;
    if (dup) break;
    all.push_back(static_cast<int>(idx));
  }
  return all;
}

Settings Load() {
  Settings s;
  s.emulated_gpus = EnvInt("RINGMASTER_EMULATED_GPUS", 0);
  if (s.emulated_gpus < 0) s.emulated_gpus = 0;
  s.visible = VisibleDevices(s.emulated_gpus);
  s.nccl_version = EnvInt("RINGMASTER_EMULATED_NCCL_VERSION", NCCL_VERSION_CODE);
  s.latency_ms = EnvInt("RINGMASTER_EMULATED_NCCL_LATENCY_MS", 0);
  if (s.latency_ms < 0) s.latency_ms = 0;
  if (!Env("RINGMASTER_EMULATED_NCCL_ADDR").empty()) s.bind_address = Env("RINGMASTER_EMULATED_NCCL_ADDR");
  s.multi_rank_gpu = EnvInt("NCCL_MULTI_RANK_GPU_ENABLE", 0) == 1;
  int blocking = EnvInt("NCCL_COMM_BLOCKING", -1);
  s.comm_blocking = (blocking == 0 || blocking == 1) ? blocking : -1;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  s.hostname = host;
  // as getHostHash (utils.cc): NCCL_HOSTID, else the host name followed by the boot id
  std::string identity = Env("NCCL_HOSTID");
  if (identity.empty()) {
    identity = s.hostname;
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string id;
    if (boot >> id) identity += id;
  }
  s.host_hash = HashBytes(identity.data(), identity.size());
  std::string debug = Env("NCCL_DEBUG");
  for (auto& ch : debug) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  s.quiet = debug == "NONE" || debug == "VERSION";
  s.async_pageable_ms = std::max(0, EnvInt("RINGMASTER_EMULATED_CUDA_ASYNC_PAGEABLE", 0));
  return s;
}

}  // namespace

const Settings& GetSettings() {
  static const Settings* settings = new Settings(Load());  // never freed: threads may read it at exit
  return *settings;
}

// Counts calls per (knob, key) for the process, under a lock; true on the n-th.
static bool CountedCall(const std::string& knob, const std::string& key, long nth) {
  static std::mutex mu;
  static auto* calls = new std::map<std::string, long>;  // never freed, as GetSettings' object
  std::lock_guard<std::mutex> lock(mu);
  return ++(*calls)[knob + "/" + key] == nth;
}

bool InjectedAt(const char* knob, const char* op_name) {
  const std::string spec = Env(knob);
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || spec.compare(0, colon, op_name) != 0) return false;
  char* end = nullptr;
  const long nth = std::strtol(spec.c_str() + colon + 1, &end, 10);
  if (end == nullptr || *end != '\0' || nth < 1) return false;
  return CountedCall(knob, op_name, nth);
}

bool InjectedFault(const char* op_name) { return InjectedAt("RINGMASTER_EMULATED_NCCL_FAIL", op_name); }

bool InjectedIllegalAddress() {
  const long nth = EnvInt("RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS", 0);
  return nth >= 1 && CountedCall("RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS", "kernel", nth);
}

uint64_t HashBytes(const void* data, size_t bytes, uint64_t seed) {
  // FNV-1a, then a final avalanche (splitmix64)
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

uint64_t HashCombine(uint64_t a, uint64_t b) {
  uint64_t v[2] = {a, b};
  return HashBytes(v, sizeof v);
}

}  // namespace gpuemu
