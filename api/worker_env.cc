#include "api/worker_env.h"

#include <charconv>
#include <functional>
#include <vector>

#include "api/names.h"
#include "base/environment.h"

namespace ringmaster::api {

using json = nlohmann::json;

namespace {

// One variable and the field it maps to; `kind` says how it is written and read.
enum class Kind { kString, kInt, kVerbatim, kDownward };
struct Var {
  std::string_view name;
  Kind kind;
  std::string* str = nullptr;
  std::optional<int32_t>* num = nullptr;
  std::optional<std::string>* verbatim = nullptr;
  const char* field_path = nullptr;  // kDownward: the pod field it comes from
};

// Every variable of `e`, in the order a pod lists them. Pointers into `e`.
std::vector<Var> Vars(WorkerEnv& e) {
  return {
      {env::kJobName, Kind::kString, &e.job_name},
      {env::kJobNamespace, Kind::kDownward, &e.job_namespace, nullptr, nullptr, "metadata.namespace"},
      {env::kPodName, Kind::kDownward, &e.pod_name, nullptr, nullptr, "metadata.name"},
      {env::kPodUid, Kind::kDownward, &e.pod_uid, nullptr, nullptr, "metadata.uid"},
      {env::kPodIp, Kind::kDownward, &e.pod_ip, nullptr, nullptr, "status.podIP"},
      {env::kNodeName, Kind::kDownward, &e.node_name, nullptr, nullptr, "spec.nodeName"},
      {env::kWorkerIndex, Kind::kInt, nullptr, &e.worker_index},
      {env::kCoordinatorPort, Kind::kInt, nullptr, &e.coordinator_port},
      {env::kHealthPort, Kind::kInt, nullptr, &e.health_port},
      {env::kSecret, Kind::kString, &e.secret},  // a pod gets it from the Secret (ToPodEnv)
      {env::kMinWorkers, Kind::kInt, nullptr, &e.min_workers},
      {env::kReplicasMultipleOf, Kind::kInt, nullptr, &e.replicas_multiple_of},
      {env::kCheckpointDir, Kind::kString, &e.checkpoint_dir},
      {env::kCheckpointKeep, Kind::kInt, nullptr, &e.checkpoint_keep},
      {env::kWorkerId, Kind::kString, &e.worker_id},
      {env::kStorePort, Kind::kInt, nullptr, &e.store_port},
      {env::kMembershipFile, Kind::kString, &e.membership_file},
      {env::kHeartbeatFile, Kind::kString, &e.heartbeat_file},
      {env::kOut, Kind::kString, &e.out},
      {env::kBackend, Kind::kVerbatim, nullptr, nullptr, &e.backend},
      {env::kCollectiveTimeoutMs, Kind::kVerbatim, nullptr, nullptr, &e.collective_timeout_ms},
      {env::kFusionThresholdBytes, Kind::kVerbatim, nullptr, nullptr, &e.fusion_threshold_bytes},
      {env::kCycleTimeMs, Kind::kVerbatim, nullptr, nullptr, &e.cycle_time_ms},
      {env::kTimeline, Kind::kVerbatim, nullptr, nullptr, &e.timeline},
      {env::kProcessSets, Kind::kVerbatim, nullptr, nullptr, &e.process_sets},
      {env::kDevice, Kind::kVerbatim, nullptr, nullptr, &e.device},
      {env::kHangFactor, Kind::kVerbatim, nullptr, nullptr, &e.hang_factor},
      {env::kHangMinSeconds, Kind::kVerbatim, nullptr, nullptr, &e.hang_min_seconds},
  };
}

// The variable's value in `e`, when it is set.
std::optional<std::string> ValueOf(const Var& v) {
  if (v.num != nullptr) return *v.num ? std::optional<std::string>(std::to_string(**v.num)) : std::nullopt;
  if (v.verbatim != nullptr) return *v.verbatim;
  return v.str->empty() ? std::nullopt : std::optional<std::string>(*v.str);
}

StatusOr<int32_t> ParseInt(std::string_view name, const std::string& value) {
  int32_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return InvalidArgumentError(std::string(name) + "='" + value + "' is not an integer");
  }
  return n;
}

}  // namespace

json WorkerEnv::ToPodEnv(const SecretRef& secret_ref) const {
  WorkerEnv copy = *this;
  json out = json::array();
  for (const Var& v : Vars(copy)) {
    if (v.kind == Kind::kDownward) {
      out.push_back({{"name", v.name}, {"valueFrom", {{"fieldRef", {{"fieldPath", v.field_path}}}}}});
    } else if (v.name == env::kSecret) {
      out.push_back(
          {{"name", v.name}, {"valueFrom", {{"secretKeyRef", {{"name", secret_ref.name}, {"key", secret_ref.key}}}}}});
    } else if (std::optional<std::string> value = ValueOf(v)) {
      out.push_back({{"name", v.name}, {"value", *value}});
    }
  }
  return out;
}

std::map<std::string, std::string> WorkerEnv::ToEnvironment() const {
  WorkerEnv copy = *this;
  std::map<std::string, std::string> out;
  for (const Var& v : Vars(copy)) {
    if (std::optional<std::string> value = ValueOf(v)) out[std::string(v.name)] = *value;
  }
  return out;
}

StatusOr<WorkerEnv> WorkerEnv::FromEnvironment(const std::map<std::string, std::string>& environment) {
  WorkerEnv e;
  for (const Var& v : Vars(e)) {
    auto it = environment.find(std::string(v.name));
    if (it == environment.end()) continue;
    if (v.verbatim != nullptr) {
      *v.verbatim = it->second;
    } else if (it->second.empty()) {
      continue;  // set but empty: unset
    } else if (v.num != nullptr) {
      RINGMASTER_ASSIGN_OR_RETURN(*v.num, ParseInt(v.name, it->second));
    } else {
      *v.str = it->second;
    }
  }
  return e;
}

std::map<std::string, std::string> EnvironmentSnapshot() {
  std::map<std::string, std::string> env;
  for (char** e = ProcessEnvironment(); *e != nullptr; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace ringmaster::api
