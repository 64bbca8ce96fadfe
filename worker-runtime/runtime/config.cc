#include "worker-runtime/runtime/config.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "api/names.h"
#include "api/worker_env.h"

namespace ringmaster::runtime {
namespace {

// Not (yet) one of api::WorkerEnv's variables: read from the map here, once, like the others.
constexpr char kAllreduceAlgorithm[] = "RINGMASTER_ALLREDUCE_ALGORITHM";

// The longest collective timeout: a year (a larger one could overflow the clock as a deadline).
constexpr long long kMaxTimeoutMs = 365LL * 24 * 3600 * 1000;

// An integer in [min, max]; out-of-range text (strtoll's ERANGE) is refused, never clamped.
StatusOr<long long> ParseNumber(const std::string& key, const std::string& value, long long min,
                                long long max = std::numeric_limits<long long>::max()) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    std::string range = max == std::numeric_limits<long long>::max()
                            ? ">= " + std::to_string(min)
                            : "between " + std::to_string(min) + " and " + std::to_string(max);
    return InvalidArgumentError(key + "='" + value + "' is not an integer " + range);
  }
  return v;
}

StatusOr<std::vector<std::vector<int>>> ParseProcessSets(const std::string& value) {
  const std::string name(api::env::kProcessSets);
  std::vector<std::vector<int>> out;
  std::stringstream sets(value);
  std::string set;
  while (std::getline(sets, set, ';')) {
    std::vector<int> ranks;
    std::stringstream rs(set);
    std::string r;
    while (std::getline(rs, r, ',')) {
      RINGMASTER_ASSIGN_OR_RETURN(long long n, ParseNumber(name, r, 0, std::numeric_limits<int>::max()));
      ranks.push_back(static_cast<int>(n));
    }
    if (ranks.empty()) return InvalidArgumentError(name + "='" + value + "' has an empty set");
    out.push_back(std::move(ranks));
  }
  return out;
}

}  // namespace

StatusOr<RuntimeConfig> ParseRuntimeConfig(const std::map<std::string, std::string>& env) {
  RINGMASTER_ASSIGN_OR_RETURN(api::WorkerEnv worker, api::WorkerEnv::FromEnvironment(env));
  RuntimeConfig c;
  if (worker.backend) {
    auto b = comm::ParseBackend(*worker.backend);
    if (!b.ok()) return b.status().WithContext(api::env::kBackend);
    c.backend = *b;
  }
  if (worker.collective_timeout_ms) {
    RINGMASTER_ASSIGN_OR_RETURN(long long ms, ParseNumber(std::string(api::env::kCollectiveTimeoutMs),
                                                          *worker.collective_timeout_ms, 1, kMaxTimeoutMs));
    c.timeout = std::chrono::milliseconds(ms);
  }
  if (worker.fusion_threshold_bytes) {
    RINGMASTER_ASSIGN_OR_RETURN(
        long long b, ParseNumber(std::string(api::env::kFusionThresholdBytes), *worker.fusion_threshold_bytes, 0));
    c.fusion_threshold_bytes = static_cast<size_t>(b);
  }
  if (const auto& v = worker.cycle_time_ms) {
    char* end = nullptr;
    double ms = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(ms >= 0) || ms > 60000) {
      return InvalidArgumentError(std::string(api::env::kCycleTimeMs) + "='" + *v +
                                  "' is not a number of milliseconds");
    }
    c.cycle_time = std::chrono::microseconds(static_cast<long long>(ms * 1000));
  }
  if (worker.timeline) c.timeline_path = *worker.timeline;
  if (worker.process_sets) {
    RINGMASTER_ASSIGN_OR_RETURN(c.process_sets, ParseProcessSets(*worker.process_sets));
  }
  if (worker.device) {
    RINGMASTER_ASSIGN_OR_RETURN(
        long long d, ParseNumber(std::string(api::env::kDevice), *worker.device, 0, std::numeric_limits<int>::max()));
    c.device = static_cast<int>(d);
  }
  if (auto it = env.find(kAllreduceAlgorithm); it != env.end() && !it->second.empty()) {
    auto policy = gloo::ParseAllreducePolicy(it->second);
    if (!policy.ok()) return policy.status().WithContext(kAllreduceAlgorithm);
    c.allreduce = *policy;
  }
  return c;
}

}  // namespace ringmaster::runtime
