#include "operator/kubectl_plugin/plugin_options.h"

#include <memory>

#include "base/cli.h"
#include "operator/kubectl_plugin/durations.h"

namespace ringmaster::kubectl_plugin {

namespace {

constexpr char kDescription[] =
    "kubectl-ringmaster: a kubectl plugin for TrainingJobs (ringmaster.io). Run it as `kubectl ringmaster COMMAND`.";
constexpr char kFooter[] = R"(Examples:
  kubectl ringmaster status train -n team-a     the job, its goodput and its generations as a timeline
  kubectl ringmaster events train               the job's and its worker pods' Events, oldest first
  kubectl ringmaster kill train --rank 1        hard-kill the pod holding rank 1 (as a crash would)
  kubectl ringmaster drill train --timeout 5m   kill a random rank and time detection and recovery)";

struct Apps {
  std::unique_ptr<CLI::App> app;
  CLI::App* status = nullptr;
  CLI::App* events = nullptr;
  CLI::App* kill = nullptr;
  CLI::App* drill = nullptr;
};

CLI::App* AddCommand(CLI::App& app, const std::string& name, const std::string& what, PluginOptions& o) {
  CLI::App* sub = app.add_subcommand(name, what);
  sub->add_option("JOB", o.job, "the TrainingJob's name")->required();
  sub->fallthrough();  // --kubeconfig, --context and -n after the command belong to the program
  return sub;
}

// The flags and commands, bound to `o`; o's values are the defaults --help shows.
Apps NewPluginApp(PluginOptions& o) {
  Apps a;
  a.app = cli::NewApp(kProgram, kDescription, kFooter);
  a.app->add_option("--kubeconfig", o.kubeconfig,
                    "Path to a kubeconfig (default: $KUBECONFIG, a colon-separated list; then ~/.kube/config; then the "
                    "in-cluster service account).");
  a.app->add_option("--context", o.context, "The kubeconfig context to use (default: its current-context).");
  a.app->add_option("-n,--namespace", o.ns, "The job's namespace (default: the context's namespace, else default).");
  a.status = AddCommand(*a.app, "status",
                        "Phase, workers, restarts, start and age, goodput, and every membership generation as a "
                        "timeline (time, world size, reason, how long it lasted).",
                        o);
  a.events = AddCommand(*a.app, "events", "The Events of the job and of its worker pods, oldest first.", o);
  a.kill = AddCommand(*a.app, "kill",
                      "Delete the worker pod holding --rank now (grace period 0, uid precondition): a hard failure, "
                      "as `kubectl delete pod --force --grace-period=0` does; not an eviction.",
                      o);
  a.kill->add_option("--rank", o.rank, "The rank (in the current membership) whose pod to kill.")
      ->required()
      ->check(CLI::NonNegativeNumber)
      ->default_str("");
  a.drill = AddCommand(*a.app, "drill",
                       "A fire drill: kill a rank as `kill` does, then time the operator's detection (the first "
                       "generation without it) and the job's recovery (the first step of a generation after the "
                       "kill, from the workers' progress record).",
                       o);
  a.drill->add_option("--rank", o.rank, "The rank to kill.")->check(CLI::NonNegativeNumber)->default_str("random");
  cli::AddParsed<std::chrono::seconds>(*a.drill, "--timeout", &o.timeout, ParseDuration,
                                       "How long to wait for detection and recovery (e.g. 90s, 5m).", "5m");
  a.app->require_subcommand(1);
  return a;
}

// CLI11 says only "A subcommand is required" when the command is missing or unknown: name which.
Status NoCommand(const std::vector<std::string>& args) {
  const std::string want = "want status, events, kill or drill";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--kubeconfig" || a == "--context" || a == "-n" || a == "--namespace") {
      ++i;  // its value
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return InvalidArgumentError("unknown command '" + a + "': " + want);
  }
  return InvalidArgumentError("no command: " + want);
}

}  // namespace

std::string UsageText() {
  PluginOptions defaults;
  return NewPluginApp(defaults).app->help();
}

StatusOr<PluginOptions> ParsePluginFlags(const std::vector<std::string>& args) {
  PluginOptions o;
  Apps a = NewPluginApp(o);
  StatusOr<cli::Parsed> result = cli::Parse(*a.app, args);
  if (!result.ok() && result.status().message().find("A subcommand is required") != std::string::npos) {
    return NoCommand(args);
  }
  RINGMASTER_ASSIGN_OR_RETURN(cli::Parsed parsed, std::move(result));
  if (parsed == cli::Parsed::kHelp) {
    PluginOptions help;
    help.help = true;
    help.help_text = a.app->help();
    for (CLI::App* sub : {a.status, a.events, a.kill, a.drill}) {
      if (sub->parsed()) help.help_text = sub->help();
    }
    return help;
  }
  if (a.status->parsed()) o.command = Command::kStatus;
  if (a.events->parsed()) o.command = Command::kEvents;
  if (a.kill->parsed()) o.command = Command::kKill;
  if (a.drill->parsed()) o.command = Command::kDrill;
  if (o.job.empty()) return InvalidArgumentError("JOB is empty: name a TrainingJob");
  return o;
}

}  // namespace ringmaster::kubectl_plugin
