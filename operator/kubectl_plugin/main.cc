// kubectl-ringmaster: the kubectl plugin for TrainingJobs (`kubectl ringmaster status|events|kill|drill JOB`).
// See --help and README.md.
#include <cstdio>
#include <iostream>

#include "base/cli.h"
#include "kube/client.h"
#include "kube/config.h"
#include "operator/kubectl_plugin/commands.h"
#include "operator/kubectl_plugin/plugin_config.h"
#include "operator/kubectl_plugin/plugin_options.h"

namespace kp = ringmaster::kubectl_plugin;

namespace {

int Fail(const ringmaster::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

ringmaster::Status Run(const kp::PluginOptions& o, const kp::Cluster& cluster) {
  switch (o.command) {
    case kp::Command::kStatus: return kp::RunStatus(cluster, o.job, std::cout);
    case kp::Command::kEvents: return kp::RunEvents(cluster, o.job, std::cout);
    case kp::Command::kKill: return kp::RunKill(cluster, o.job, o.rank, std::cout);
    case kp::Command::kDrill: return kp::RunDrill(cluster, o.job, o.rank, o.timeout, std::cout);
  }
  return ringmaster::InternalError("unknown command");
}

}  // namespace

int main(int argc, char** argv) {
  auto options = kp::ParsePluginFlags(ringmaster::cli::Args(argc, argv));
  if (!options.ok()) return *ringmaster::cli::ExitEarly(kp::kProgram, options.status(), false, kp::UsageText);
  if (options->help) {
    std::fputs(options->help_text.c_str(), stdout);
    return 0;
  }
  auto config = kp::LoadPluginConfig(*options, ringmaster::kube::ProcessEnvironment());
  if (!config.ok()) return Fail(config.status());
  for (const auto& w : config->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  // No log sink: a failure comes back as a Status and is printed once, as one line.
  auto client = ringmaster::kube::NewClient(*config, nullptr, ringmaster::LogSink());
  if (!client.ok()) return Fail(client.status());
  kp::Cluster cluster{client->get(), config->namespace_name, config->server};
  ringmaster::Status done = Run(*options, cluster);
  std::cout.flush();
  if (!done.ok()) return Fail(done);
  return 0;
}
