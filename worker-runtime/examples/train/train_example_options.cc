#include "examples/train/train_example_options.h"

#include <exception>
#include <optional>
#include <vector>

#include "api/worker_env.h"

namespace ringmaster::elastic {
namespace {

constexpr const char* kUsage =
    "usage: ringmaster-train-example [--steps N] [--seed S] [--dtype float32|float64] [--samples N] [--features D]\n"
    "  [--batch B] [--lr X] [--hierarchical true|false] [--backend gloo|nccl|auto] [--checkpoint-dir DIR]\n"
    "  [--checkpoint-every K] [--out DIR] [--heartbeat-file F] [--membership-file F | --job-name J\n"
    "  --job-namespace NS [--kubeconfig F]] [--worker-id ID] [--secret S] [--host IP] [--store-port P]\n"
    "  [--health-port P] [--min N] [--timeout-ms T] [--step-delay-ms T]\n"
    "Environment fallbacks: RINGMASTER_MEMBERSHIP_FILE, RINGMASTER_JOB_NAME, RINGMASTER_JOB_NAMESPACE,\n"
    "  RINGMASTER_WORKER_ID (else RINGMASTER_POD_NAME), RINGMASTER_SECRET, RINGMASTER_POD_IP (--host),\n"
    "  RINGMASTER_STORE_PORT (else RINGMASTER_COORDINATOR_PORT), RINGMASTER_HEALTH_PORT (9400; 0 = any),\n"
    "  RINGMASTER_MIN_WORKERS, RINGMASTER_BACKEND, RINGMASTER_CHECKPOINT_DIR, RINGMASTER_OUT,\n"
    "  RINGMASTER_HEARTBEAT_FILE.\n"
    "Membership: the file when one is given, else the TrainingJob named by --job-name/RINGMASTER_JOB_NAME.";

// The flags' values taken from the worker's environment (the local launcher and the operator's pods pass
// everything through it); flags on the command line override them. Unset and empty variables give nothing.
StatusOr<std::map<std::string, std::string>> FlagsFromEnvironment(const std::map<std::string, std::string>& env) {
  RINGMASTER_ASSIGN_OR_RETURN(api::WorkerEnv w, api::WorkerEnv::FromEnvironment(env));
  std::map<std::string, std::string> v;
  auto set = [&v](const char* flag, const std::string& value) {
    if (!value.empty()) v[flag] = value;
  };
  auto set_int = [&v](const char* flag, std::optional<int32_t> value) {
    if (value) v[flag] = std::to_string(*value);
  };
  set("--membership-file", w.membership_file);
  set("--job-name", w.job_name);
  set("--job-namespace", w.job_namespace);
  set("--worker-id", w.worker_id.empty() ? w.pod_name : w.worker_id);
  set("--secret", w.secret);
  set("--host", w.pod_ip);
  set_int("--store-port", w.store_port ? w.store_port : w.coordinator_port);
  set_int("--health-port", w.health_port);
  set_int("--min", w.min_workers);
  set("--backend", w.backend.value_or(""));
  set("--checkpoint-dir", w.checkpoint_dir);
  set("--out", w.out);
  set("--heartbeat-file", w.heartbeat_file);
  return v;
}

}  // namespace

StatusOr<TrainOptions> ParseTrainOptions(int argc, char** argv, const std::map<std::string, std::string>& env) {
  // Environment first, flags override.
  using Flags = std::map<std::string, std::string>;
  RINGMASTER_ASSIGN_OR_RETURN(Flags v, FlagsFromEnvironment(env));
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help") return InvalidArgumentError(kUsage);
    if (a.rfind("--", 0) != 0) return InvalidArgumentError("unexpected argument '" + a + "' (see --help)");
    if (i + 1 >= argc) return InvalidArgumentError("flag '" + a + "' needs a value (see --help)");
    v[a] = argv[++i];
  }

  TrainOptions o;
  for (const auto& [k, val] : v) {
    try {
      if (k == "--steps") o.steps = std::stoll(val);
      else if (k == "--seed") o.seed = std::stoull(val);
      else if (k == "--dtype") {
        if (val != "float32" && val != "float64") return InvalidArgumentError("--dtype must be float32 or float64");
        o.float64 = val == "float64";
      } else if (k == "--samples") o.samples = std::stoull(val);
      else if (k == "--features") o.features = std::stoi(val);
      else if (k == "--batch") o.batch = std::stoull(val);
      else if (k == "--lr") o.lr = std::stod(val);
      else if (k == "--hierarchical") {
        if (val != "true" && val != "false") return InvalidArgumentError("--hierarchical must be true or false");
        o.hierarchical = val == "true";
      } else if (k == "--backend") {
        auto b = runtime::ParseBackend(val);
        if (!b.ok()) return b.status().WithContext("--backend");
        o.backend = *b;
      } else if (k == "--checkpoint-dir") o.checkpoint_dir = val;
      else if (k == "--checkpoint-every") o.checkpoint_every = std::stoi(val);
      else if (k == "--out") o.out = val;
      else if (k == "--heartbeat-file") o.heartbeat_file = val;
      else if (k == "--membership-file") o.membership_file = val;
      else if (k == "--job-name") o.job_name = val;
      else if (k == "--job-namespace") o.job_namespace = val;
      else if (k == "--kubeconfig") o.kubeconfig = val;
      else if (k == "--worker-id") o.worker_id = val;
      else if (k == "--secret") o.secret = val;
      else if (k == "--host") o.host = val;
      else if (k == "--store-port") o.store_port = std::stoi(val);
      else if (k == "--health-port") o.health_port = std::stoi(val);
      else if (k == "--min") o.min_size = std::stoi(val);
      else if (k == "--timeout-ms") o.timeout_ms = std::stoi(val);
      else if (k == "--step-delay-ms") o.step_delay_ms = std::stoi(val);
      else return InvalidArgumentError("unknown flag '" + k + "' (see --help)");
    } catch (const std::exception&) {
      return InvalidArgumentError(k + " needs a number, got '" + val + "'");
    }
  }
  if (o.membership_file.empty() && o.job_name.empty()) {
    return InvalidArgumentError("no membership source: give --membership-file (RINGMASTER_MEMBERSHIP_FILE) or "
                                "--job-name (RINGMASTER_JOB_NAME, set by the operator in a worker pod)");
  }
  if (o.membership_file.empty() && o.job_namespace.empty()) {
    return InvalidArgumentError("--job-name needs --job-namespace (RINGMASTER_JOB_NAMESPACE)");
  }
  if (o.worker_id.empty() || o.secret.empty() || o.store_port <= 0 || o.store_port > 65535) {
    return InvalidArgumentError("--worker-id, --secret and --store-port are required (or RINGMASTER_WORKER_ID/"
                                "POD_NAME, RINGMASTER_SECRET, RINGMASTER_STORE_PORT/COORDINATOR_PORT)");
  }
  if (o.features < 1 || o.batch < 1 || o.samples < 1) {
    return InvalidArgumentError("--features, --batch, --samples must be >= 1");
  }
  if (o.health_port < 0 || o.health_port > 65535) return InvalidArgumentError("--health-port must be 0..65535");
  return o;
}

}  // namespace ringmaster::elastic
