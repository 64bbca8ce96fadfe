#include "runtime/config.h"

#include <cstdlib>
#include <sstream>

extern char** environ;

namespace ringmaster::runtime {
namespace {

StatusOr<long long> ParseNumber(const std::string& key, const std::string& value, long long min) {
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < min) {
    return InvalidArgumentError(key + "='" + value + "' is not an integer >= " + std::to_string(min));
  }
  return v;
}

}  // namespace

StatusOr<RuntimeConfig> ParseRuntimeConfig(const std::map<std::string, std::string>& env) {
  RuntimeConfig c;
  auto get = [&](const char* key) -> const std::string* {
    auto it = env.find(key);
    return it == env.end() ? nullptr : &it->second;
  };
  if (auto* v = get("RINGMASTER_BACKEND")) {
    auto b = ParseBackend(*v);
    if (!b.ok()) return b.status().WithContext("RINGMASTER_BACKEND");
    c.backend = *b;
  }
  if (auto* v = get("RINGMASTER_COLLECTIVE_TIMEOUT_MS")) {
    RINGMASTER_ASSIGN_OR_RETURN(long long ms, ParseNumber("RINGMASTER_COLLECTIVE_TIMEOUT_MS", *v, 1));
    c.timeout = std::chrono::milliseconds(ms);
  }
  if (auto* v = get("RINGMASTER_FUSION_THRESHOLD_BYTES")) {
    RINGMASTER_ASSIGN_OR_RETURN(long long b, ParseNumber("RINGMASTER_FUSION_THRESHOLD_BYTES", *v, 0));
    c.fusion_threshold_bytes = static_cast<size_t>(b);
  }
  if (auto* v = get("RINGMASTER_CYCLE_TIME_MS")) {
    char* end = nullptr;
    double ms = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(ms >= 0) || ms > 60000) {
      return InvalidArgumentError("RINGMASTER_CYCLE_TIME_MS='" + *v + "' is not a number of milliseconds");
    }
    c.cycle_time = std::chrono::microseconds(static_cast<long long>(ms * 1000));
  }
  if (auto* v = get("RINGMASTER_TIMELINE")) c.timeline_path = *v;
  if (auto* v = get("RINGMASTER_PROCESS_SETS")) {
    std::stringstream sets(*v);
    std::string set;
    while (std::getline(sets, set, ';')) {
      std::vector<int> ranks;
      std::stringstream rs(set);
      std::string r;
      while (std::getline(rs, r, ',')) {
        RINGMASTER_ASSIGN_OR_RETURN(long long n, ParseNumber("RINGMASTER_PROCESS_SETS", r, 0));
        ranks.push_back(static_cast<int>(n));
      }
      if (ranks.empty()) return InvalidArgumentError("RINGMASTER_PROCESS_SETS='" + *v + "' has an empty set");
      c.process_sets.push_back(std::move(ranks));
    }
  }
  return c;
}

std::map<std::string, std::string> EnvironmentSnapshot() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace ringmaster::runtime
