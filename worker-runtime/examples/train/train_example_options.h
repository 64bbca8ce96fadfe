// The options of ringmaster-train-example, parsed once from its flags with the
// environment as the fallback (the local launcher and the operator's pods pass
// everything through RINGMASTER_* variables; see ParseTrainOptions).
#pragma once

#include <map>
#include <string>

#include "api/names.h"
#include "base/status.h"
#include "comm/communicator.h"

namespace ringmaster::elastic {

struct TrainOptions {
  // The model and the data.
  int64_t steps = 20;
  uint64_t seed = 1;
  bool float64 = true;
  uint64_t samples = 64;
  int features = 8;
  uint64_t batch = 16;
  double lr = 0.1;
  bool hierarchical = false;  // reduce per node, then across node leaders, then broadcast per node
  runtime::Backend backend = runtime::Backend::kGloo;
  // Checkpoints and outputs.
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  std::string out = ".";
  std::string heartbeat_file;
  // Membership: a file (the local launcher), or the job's own TrainingJob (in a pod).
  std::string membership_file;
  std::string job_name;
  std::string job_namespace;
  std::string kubeconfig;  // empty: kubectl's precedence ($KUBECONFIG, then in-cluster)
  // This worker.
  std::string worker_id;
  std::string secret;
  std::string host = "127.0.0.1";  // where its store, Gloo and metrics listen (the pod IP in a pod)
  int store_port = 0;
  int health_port = api::kWorkerHealthPort;
  int min_size = 1;
  int timeout_ms = 10000;
  int step_delay_ms = 0;
  bool help = false;  // --help: print TrainUsage() and exit 0
};

// Sets the fields the RINGMASTER_* environment gives (for each, the first variable present wins; see
// TrainUsage()). Errors: InvalidArgument naming the variable whose value is malformed.
Status ApplyTrainEnvironment(const std::map<std::string, std::string>& env, TrainOptions* o);

// The environment (ApplyTrainEnvironment), then the flags argv[1..argc) over it (base/cli.h: CLI11).
// Errors: InvalidArgument naming the flag or variable; `--help` sets help and nothing else is checked.
StatusOr<TrainOptions> ParseTrainOptions(int argc, char** argv, const std::map<std::string, std::string>& env);

// The --help text: every flag with its default, and the environment variables that stand in for flags.
std::string TrainUsage();

}  // namespace ringmaster::elastic
