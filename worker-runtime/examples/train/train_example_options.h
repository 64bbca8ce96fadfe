// The options of ringmaster-train-example, parsed once from its flags with the
// environment as the fallback (the local launcher and the operator's pods pass
// everything through RINGMASTER_* variables; see ParseTrainOptions).
#pragma once

#include <map>
#include <string>

#include "api/names.h"
#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/elastic/worker_options.h"

namespace ringmaster::examples {

inline constexpr double kIntegerGradUnit = 0x1.0p-10;  // --integer-grads: the gradient's resolution

// The worker's part (membership, identity, checkpoints, outputs) is elastic::WorkerOptions, shared with
// every worker program; the model's part is this program's own.
struct TrainOptions : elastic::WorkerOptions {
  // The model and the data.
  int64_t steps = 20;
  uint64_t seed = 1;
  bool float64 = true;
  uint64_t samples = 64;
  int features = 8;
  uint64_t batch = 16;
  double lr = 0.1;
  bool hierarchical = false;  // reduce per node, then across node leaders, then broadcast per node
  // Each sample's gradient rounded to a whole number of kIntegerGradUnit (the allreduced values are integers,
  // the unit applied after the sum): sums are exact in any order, so any world's weights equal a one-process
  // run's bit for bit, and every rank's agreed state at a step has the same checksum as that run's.
  bool integer_grads = false;
  // Where the training thread says whether it is inside the gradient's collective (tools/run/phase_file.h;
  // ringmaster-run's killcoll reads it). Empty: nothing written.
  std::string phase_file;
  int step_delay_ms = 0;
  bool help = false;  // --help: print TrainUsage() and exit 0
};

// The environment (ApplyWorkerEnvironment), then the flags argv[1..argc) over it (base/cli.h: CLI11).
// Errors: InvalidArgument naming the flag or variable; `--help` sets help and nothing else is checked.
StatusOr<TrainOptions> ParseTrainOptions(int argc, char** argv, const std::map<std::string, std::string>& env);

// The --help text: every flag with its default, and the environment variables that stand in for flags.
std::string TrainUsage();

}  // namespace ringmaster::examples
