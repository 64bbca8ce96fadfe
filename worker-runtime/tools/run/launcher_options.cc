#include "worker-runtime/tools/run/launcher_options.h"

#include <memory>

#include "base/cli.h"

namespace ringmaster::run {
namespace {

constexpr char kDescription[] =
    "ringmaster-run: the local elastic launcher. Starts --np workers on 127.0.0.1, keeps the membership\n"
    "file OUT/membership.json, removes workers that die or stop heart-beating, injects chaos, and at the\n"
    "end writes OUT/samples.log and OUT/weights.txt. Exit status: 0 when the training finished, 1\n"
    "otherwise, 2 for a bad command line. A worker that exits with a termination message (OUT/termination.ID:\n"
    "what no rebuild repairs, such as a sticky CUDA error or a refused GPU) ends the run at once. The worker\n"
    "command comes after --:\n"
    "  ringmaster-run --np 4 --min 2 --max 6 [--chaos SPEC] [--out DIR] -- COMMAND...\n"
    "A worker has --startup-timeout-s to send its first heartbeat (it beats once it starts the ringmaster\n"
    "runtime, after its imports), then at most --heartbeat-timeout-ms between two; the run has no deadline\n"
    "unless --deadline-s is given.";

constexpr char kFooter[] =
    "Chaos SPEC: comma-separated ACTION@STEP[:ARG], fired once the workers' committed step reaches STEP:\n"
    "  kill@S:R  killsave@S:R  killcoll@S:R  killcolls@S:N  stop@S:R  pause@S:R  add@S:N  killadd@S:R\n"
    "  random@S:N\n"
    "(R: a rank; N: a count; see worker-runtime/tools/run/launcher.h). killcoll SIGKILLs rank R while it is inside\n"
    "a collective (as its phase file OUT/phase.<worker>, RINGMASTER_PHASE_FILE, says) and adds a replacement;\n"
    "killcolls@S:N is N of them, of ranks drawn from --chaos-seed, one every 2 steps from S.";

// Binds --flag, a whole number >= least of Unit, to *out.
template <typename Unit, typename Duration>
void AddDuration(CLI::App& app, const std::string& flag, Duration* out, const std::string& help, int64_t least = 0) {
  app.add_option_function<int64_t>(
         flag, [out](int64_t n) { *out = std::chrono::duration_cast<Duration>(Unit(n)); }, help)
      ->check(CLI::Range(least, int64_t{1000000000}))
      ->default_str(std::to_string(std::chrono::duration_cast<Unit>(*out).count()));
}

std::unique_ptr<CLI::App> NewLauncherApp(LauncherOptions& o) {
  auto app = cli::NewApp("ringmaster-run", kDescription, kFooter);
  app->add_option("--np", o.np, "workers at the start")->check(CLI::Range(1, 100000));
  app->add_option("--min", o.min, "fewest workers the training goes on with")->check(CLI::Range(1, 100000));
  app->add_option("--max", o.max, "most workers chaos may add")->check(CLI::Range(1, 100000));
  cli::AddParsed<std::vector<ChaosEvent>>(*app, "--chaos", &o.chaos, ParseChaos, "chaos SPEC (below)", "");
  AddDuration<std::chrono::milliseconds>(*app, "--chaos-gap-ms", &o.chaos_gap, "least time between two chaos events");
  AddDuration<std::chrono::milliseconds>(*app, "--pause-ms", &o.pause, "how long pause@ keeps a worker stopped");
  app->add_option("--chaos-seed", o.chaos_seed, "seed of random@ events")->check(cli::NotNegative());
  app->add_option("--workers-per-node", o.workers_per_node, "> 0: worker slot i on simulated node node<i/K>")
      ->check(CLI::Range(0, 100000));
  // The two heartbeat timeouts are at least 1: 0 would remove every worker at once.
  AddDuration<std::chrono::milliseconds>(*app, "--heartbeat-timeout-ms", &o.heartbeat_timeout,
                                         "a worker silent this long after a heartbeat is removed and killed", 1);
  AddDuration<std::chrono::seconds>(*app, "--startup-timeout-s", &o.startup_timeout,
                                    "a worker with no heartbeat this long after its start is removed and killed", 1);
  AddDuration<std::chrono::seconds>(*app, "--deadline-s", &o.deadline,
                                    "the whole run, then every worker is killed; 0: no deadline");
  app->add_option("--out", o.out, "directory for the membership file, heartbeats, journals and results");
  app->add_option("--checkpoint-dir", o.checkpoint_dir,
                  "passed to the workers (RINGMASTER_CHECKPOINT_DIR); killsave watches it");
  app->add_option("--secret", o.secret, "the workers' shared store secret");
  app->add_option("command", o.command, "the worker command line (after --)");
  return app;
}

Status CheckLauncherOptions(const LauncherOptions& o) {
  if (o.command.empty()) return InvalidArgumentError("no worker command after --");
  if (o.min > o.np || o.np > o.max) return InvalidArgumentError("need 1 <= --min <= --np <= --max");
  for (const auto& e : o.chaos) {
    if (e.action == "killsave" && o.checkpoint_dir.empty()) {
      return InvalidArgumentError("--chaos killsave needs --checkpoint-dir (the directory the workers save into)");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string LauncherUsage() {
  LauncherOptions defaults;
  return NewLauncherApp(defaults)->help();
}

StatusOr<LauncherOptions> ParseLauncherOptions(int argc, char** argv) {
  LauncherOptions o;
  auto app = NewLauncherApp(o);
  RINGMASTER_ASSIGN_OR_RETURN(cli::Parsed parsed, cli::Parse(*app, cli::Args(argc, argv)));
  if (parsed == cli::Parsed::kHelp) {
    LauncherOptions help;
    help.help = true;
    return help;
  }
  RINGMASTER_RETURN_IF_ERROR(CheckLauncherOptions(o));
  return o;
}

}  // namespace ringmaster::run
