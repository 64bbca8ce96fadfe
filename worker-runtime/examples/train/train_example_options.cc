#include "worker-runtime/examples/train/train_example_options.h"

#include <memory>
#include <vector>

#include "api/names.h"
#include "base/cli.h"
#include "worker-runtime/tools/run/phase_file.h"

namespace ringmaster::examples {
namespace {

constexpr char kDescription[] =
    "ringmaster-train-example: data-parallel SGD on a synthetic data set under the elastic driver.\n"
    "Membership: the file when one is given, else the TrainingJob named by --job-name/RINGMASTER_JOB_NAME.";

constexpr char kFooter[] =
    "Environment fallbacks (flags win): RINGMASTER_MEMBERSHIP_FILE, RINGMASTER_JOB_NAME, RINGMASTER_JOB_NAMESPACE,\n"
    "  RINGMASTER_WORKER_ID (else RINGMASTER_POD_NAME), RINGMASTER_SECRET, RINGMASTER_POD_IP (--host),\n"
    "  RINGMASTER_STORE_PORT (else RINGMASTER_COORDINATOR_PORT), RINGMASTER_HEALTH_PORT (29600; 0 = any),\n"
    "  RINGMASTER_MIN_WORKERS, RINGMASTER_BACKEND, RINGMASTER_CHECKPOINT_DIR, RINGMASTER_OUT,\n"
    "  RINGMASTER_HEARTBEAT_FILE, RINGMASTER_HANG_FACTOR, RINGMASTER_HANG_MIN_SECONDS,\n"
    "  RINGMASTER_PHASE_FILE (--phase-file).\n"
    "Outputs in --out: weights.<worker>.txt, journal.<worker>.log and commits.<worker>.log (\"<step> <crc>\" for\n"
    "  each step every member confirmed: the CRC32C of its agreed state).";

StatusOr<bool> ParseTrueFalse(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return InvalidArgumentError("must be true or false, not '" + text + "'");
}

StatusOr<bool> ParseFloat64(const std::string& text) {
  if (text == "float64") return true;
  if (text == "float32") return false;
  return InvalidArgumentError("must be float32 or float64, not '" + text + "'");
}

std::function<StatusOr<comm::Backend>(const std::string&)> BackendParser() {
  return [](const std::string& text) { return comm::ParseBackend(text); };
}

void AddModelFlags(CLI::App& app, TrainOptions& o) {
  app.add_option("--steps", o.steps, "training steps")->check(cli::NotNegative());
  app.add_option("--seed", o.seed, "seed of the synthetic data set")->check(cli::NotNegative());
  cli::AddParsed<bool>(app, "--dtype", &o.float64, ParseFloat64, "float32 or float64", "float64");
  app.add_option("--samples", o.samples, "samples in the data set")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--features", o.features, "features per sample")->check(CLI::Range(1, 1 << 20));
  app.add_option("--batch", o.batch, "global batch size")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--lr", o.lr, "learning rate");
  cli::AddParsed<bool>(app, "--hierarchical", &o.hierarchical, ParseTrueFalse,
                       "true: reduce per node, then across node leaders, then broadcast per node", "false");
  cli::AddParsed<bool>(app, "--integer-grads", &o.integer_grads, ParseTrueFalse,
                       "true: each sample's gradient rounded to whole 2^-10s, so sums are exact in any order (the "
                       "weights of any world equal a one-process run's bit for bit)",
                       "false");
  cli::AddParsed<comm::Backend>(app, "--backend", &o.backend, BackendParser(), "gloo, nccl or auto", "gloo");
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "where checkpoints are saved (none when empty)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "save every K steps (0: never)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--out", o.out, "directory for weights.<worker>.txt and journal.<worker>.log (created)");
  app.add_option("--heartbeat-file", o.heartbeat_file, "file rewritten with the committed step every 100 ms");
  app.add_option("--phase-file", o.phase_file,
                 "file rewritten with 'C <step>' while the step's gradient allreduce runs, '- <step>' after it "
                 "(ringmaster-run's killcoll reads it; empty: none)");
}

void AddWorkerFlags(CLI::App& app, TrainOptions& o) {
  app.add_option("--membership-file", o.membership_file, "the launcher's membership file");
  app.add_option("--job-name", o.job_name, "the TrainingJob to follow (in a pod)");
  app.add_option("--job-namespace", o.job_namespace, "its namespace");
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig (default: $KUBECONFIG, then in-cluster)");
  app.add_option("--worker-id", o.worker_id, "this worker's id in the membership");
  app.add_option("--secret", o.secret, "the job's shared store secret");
  app.add_option("--host", o.host, "where its store, Gloo and metrics listen (the pod IP in a pod)");
  app.add_option("--store-port", o.store_port, "its rendezvous store port")->check(CLI::Range(0, 65535));
  app.add_option("--health-port", o.health_port, "its /metrics and /readyz port (0: any free one)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--min", o.min_size, "fewest workers to train with")->check(CLI::Range(1, 1 << 20));
  app.add_option("--timeout-ms", o.timeout_ms, "rebuild and collective timeout")->check(CLI::Range(1, 1 << 30));
  app.add_option("--hang-factor", o.hang_factor,
                 "hang watchdog: revoke the generation after this many median steps without a commit (0: off)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--hang-min-seconds", o.hang_min_seconds, "hang watchdog: never after fewer seconds than this")
      ->check(CLI::Range(0.001, 1e6));
  app.add_option("--step-delay-ms", o.step_delay_ms, "sleep per step (tests)")->check(CLI::Range(0, 1 << 30));
}

std::unique_ptr<CLI::App> NewTrainApp(TrainOptions& o) {
  auto app = cli::NewApp("ringmaster-train-example", kDescription, kFooter);
  AddModelFlags(*app, o);
  AddWorkerFlags(*app, o);
  return app;
}

}  // namespace

std::string TrainUsage() {
  TrainOptions defaults;
  return NewTrainApp(defaults)->help();
}

StatusOr<TrainOptions> ParseTrainOptions(int argc, char** argv, const std::map<std::string, std::string>& env) {
  TrainOptions o;
  const Status from_env = elastic::ApplyWorkerEnvironment(env, &o);
  if (auto phase = env.find(run::kPhaseFileEnv); phase != env.end()) o.phase_file = phase->second;
  auto app = NewTrainApp(o);  // flags override what the environment set
  RINGMASTER_ASSIGN_OR_RETURN(cli::Parsed parsed, cli::Parse(*app, cli::Args(argc, argv)));
  if (parsed == cli::Parsed::kHelp) {
    TrainOptions help;
    help.help = true;
    return help;
  }
  RINGMASTER_RETURN_IF_ERROR(from_env);
  RINGMASTER_RETURN_IF_ERROR(elastic::CheckWorkerOptions(o));
  return o;
}

}  // namespace ringmaster::examples
