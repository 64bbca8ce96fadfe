#include "worker-runtime/elastic/worker_options.h"

#include <charconv>
#include <cstdio>
#include <optional>
#include <string_view>

#include "api/worker_env.h"

namespace ringmaster::elastic {

namespace {

// A plain decimal number in [min, max] (a factor, or seconds). Errors: InvalidArgument naming the variable.
StatusOr<double> ParseSeconds(std::string_view name, const std::string& text, double min, double max) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= min && v <= max)) {
    char range[96];
    std::snprintf(range, sizeof range, "': expected a number from %g to %g", min, max);
    return InvalidArgumentError(std::string(name) + "='" + text + range);
  }
  return v;
}

}  // namespace

Status ApplyWorkerEnvironment(const std::map<std::string, std::string>& env, WorkerOptions* o) {
  RINGMASTER_ASSIGN_OR_RETURN(api::WorkerEnv w, api::WorkerEnv::FromEnvironment(env));
  auto set = [](const std::string& value, std::string* out) {
    if (!value.empty()) *out = value;
  };
  auto set_int = [](std::optional<int32_t> value, int* out) {
    if (value) *out = *value;
  };
  set(w.membership_file, &o->membership_file);
  set(w.job_name, &o->job_name);
  set(w.job_namespace, &o->job_namespace);
  set(w.worker_id.empty() ? w.pod_name : w.worker_id, &o->worker_id);
  set(w.secret, &o->secret);
  set(w.pod_ip, &o->host);
  set_int(w.store_port ? w.store_port : w.coordinator_port, &o->store_port);
  set_int(w.health_port, &o->health_port);
  set_int(w.min_workers, &o->min_size);
  if (w.backend && !w.backend->empty()) {
    auto b = comm::ParseBackend(*w.backend);
    if (!b.ok()) return b.status().WithContext(std::string(api::env::kBackend));
    o->backend = *b;
  }
  set(w.checkpoint_dir, &o->checkpoint_dir);
  set_int(w.checkpoint_keep, &o->checkpoint_keep);
  set(w.out, &o->out);
  set(w.heartbeat_file, &o->heartbeat_file);
  if (w.hang_factor && !w.hang_factor->empty()) {
    RINGMASTER_ASSIGN_OR_RETURN(o->hang_factor, ParseSeconds(api::env::kHangFactor, *w.hang_factor, 0, 1e6));
  }
  if (w.hang_min_seconds && !w.hang_min_seconds->empty()) {
    RINGMASTER_ASSIGN_OR_RETURN(o->hang_min_seconds,
                                ParseSeconds(api::env::kHangMinSeconds, *w.hang_min_seconds, 0.001, 1e6));
  }
  o->gpus = gpu::GpuVisibility::FromEnvironment(env);
  return Status::Ok();
}

Status CheckWorkerOptions(const WorkerOptions& o) {
  if (!o.has_membership_source()) {
    return InvalidArgumentError(
        "no membership source: give --membership-file (RINGMASTER_MEMBERSHIP_FILE) or "
        "--job-name (RINGMASTER_JOB_NAME, set by the operator in a worker pod)");
  }
  if (o.membership_file.empty() && o.job_namespace.empty()) {
    return InvalidArgumentError("--job-name needs --job-namespace (RINGMASTER_JOB_NAMESPACE)");
  }
  if (o.worker_id.empty() || o.secret.empty() || o.store_port <= 0 || o.store_port > 65535) {
    return InvalidArgumentError(
        "--worker-id, --secret and --store-port are required (or RINGMASTER_WORKER_ID/"
        "POD_NAME, RINGMASTER_SECRET, RINGMASTER_STORE_PORT/COORDINATOR_PORT)");
  }
  if (o.health_port < 0 || o.health_port > 65535) return InvalidArgumentError("--health-port must be 0..65535");
  if (o.checkpoint_keep < 1) {
    return InvalidArgumentError("RINGMASTER_CHECKPOINT_KEEP=" + std::to_string(o.checkpoint_keep) +
                                ": keep at least 1 checkpoint");
  }
  return Status::Ok();
}

}  // namespace ringmaster::elastic
