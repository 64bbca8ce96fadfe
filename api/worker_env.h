// The environment of a worker as one type. The operator turns it into a pod's container env
// (ToPodEnv: plain values, plus the downward API and the job Secret for what only the kubelet knows);
// the local launcher (ringmaster-run) into its children's environment (ToEnvironment); a worker reads it
// back once, at start (FromEnvironment). The variable names are api/names.h's env::k*.
//
// Errors: FromEnvironment returns InvalidArgument naming the variable and its bad value. An empty
// variable counts as unset, except the runtime's tuning variables, whose values are kept verbatim for
// runtime::ParseRuntimeConfig to judge.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::api {

struct WorkerEnv {
  // Who and where the worker is. In a pod all but job_name and worker_index come from the downward API.
  std::string job_name;
  std::string job_namespace;
  std::string pod_name;
  std::string pod_uid;
  std::string pod_ip;
  std::string node_name;
  std::optional<int32_t> worker_index;
  std::string worker_id;  // the launcher's worker name (a pod uses its pod name)
  // The job: rendezvous, bounds, checkpoints.
  std::string secret;  // in a pod: from the per-job Secret
  std::optional<int32_t> min_workers;
  std::optional<int32_t> replicas_multiple_of;  // the world-size granularity (spec.replicas.multipleOf)
  std::optional<int32_t> coordinator_port;
  std::optional<int32_t> store_port;
  std::optional<int32_t> health_port;  // 0: any free port
  std::string checkpoint_dir;
  std::optional<int32_t> checkpoint_keep;
  // The local launcher's side channel.
  std::string membership_file;
  std::string heartbeat_file;
  std::string out;
  // The runtime's tuning (runtime::RuntimeConfig), verbatim; nullopt when unset.
  std::optional<std::string> backend;
  std::optional<std::string> collective_timeout_ms;
  std::optional<std::string> fusion_threshold_bytes;
  std::optional<std::string> cycle_time_ms;
  std::optional<std::string> timeline;
  std::optional<std::string> process_sets;
  std::optional<std::string> device;
  // The hang watchdog's factor and floor (ElasticOptions::hang_factor, hang_floor), verbatim.
  std::optional<std::string> hang_factor;
  std::optional<std::string> hang_min_seconds;

  bool operator==(const WorkerEnv&) const = default;

  // Where a pod's secret comes from: the per-job Secret's name and key.
  struct SecretRef {
    std::string name;
    std::string key;
  };
  // The container env list the operator puts in a worker pod: a json array of {name, value} and
  // {name, valueFrom: {fieldRef | secretKeyRef}}. job namespace, pod name/uid/IP and node always come from
  // the downward API and the secret from `secret_ref` (the fields here are ignored); every other set field
  // is a plain value.
  nlohmann::json ToPodEnv(const SecretRef& secret_ref) const;
  // NAME -> value for every set field (for a process started directly, as ringmaster-run does).
  std::map<std::string, std::string> ToEnvironment() const;
  // From a map of variables (a snapshot of the process environment, EnvironmentSnapshot()).
  static StatusOr<WorkerEnv> FromEnvironment(const std::map<std::string, std::string>& env);
};

// A snapshot of this process's environment, taken once.
std::map<std::string, std::string> EnvironmentSnapshot();

}  // namespace ringmaster::api
