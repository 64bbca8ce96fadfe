#include "worker-runtime/elastic/worker_setup.h"

#include <cstdio>

#include "kube/config.h"
#include "worker-runtime/elastic/termination_notice.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/membership/file_source.h"
#include "worker-runtime/membership/kubernetes_source.h"

namespace ringmaster::elastic {

StatusOr<std::unique_ptr<membership::MembershipSource>> OpenMembershipSource(const WorkerOptions& o,
                                                                             const LogSink& log) {
  if (!o.membership_file.empty()) {
    membership::FileSourceOptions fo;
    fo.path = o.membership_file;
    fo.poll_interval = std::chrono::milliseconds(20);
    fo.log = log;
    RINGMASTER_ASSIGN_OR_RETURN(auto file, membership::FileMembershipSource::Start(fo));
    return std::unique_ptr<membership::MembershipSource>(std::move(file));
  }
  if (o.job_name.empty()) return InvalidArgumentError("no membership source: neither a membership file nor a job name");
  auto config = kube::LoadConfig(o.kubeconfig, "", kube::ProcessEnvironment());
  if (!config.ok()) return config.status().WithContext("the Kubernetes membership source needs a client config");
  for (const auto& w : config->warnings) Log(log, LogLevel::kWarning, w);
  RINGMASTER_ASSIGN_OR_RETURN(auto client, kube::NewClient(*config, nullptr, log));
  RINGMASTER_ASSIGN_OR_RETURN(auto watched, membership::KubernetesMembershipSource::Start(
                                                client, {o.job_namespace, o.job_name, o.worker_id, log}));
  // The operator turns the pod's deletion into a Disrupted generation: SIGTERM need not kill mid-step.
  const bool notice = TerminationNotice::Install();
  Log(log, LogLevel::kInfo,
      "membership from TrainingJob " + o.job_namespace + "/" + o.job_name + " at " + config->server +
          (notice ? "; SIGTERM leaves at a step boundary" : "; the program handles SIGTERM itself"));
  return std::unique_ptr<membership::MembershipSource>(std::move(watched));
}

StatusOr<std::unique_ptr<checkpoint::CheckpointStore>> OpenCheckpoints(const WorkerOptions& o, const LogSink& log) {
  if (o.checkpoint_dir.empty()) return std::unique_ptr<checkpoint::CheckpointStore>();
  LogSink quiet = [log](LogLevel level, std::string_view line) {  // retention deletes one old checkpoint per save
    if (line.rfind("retention", 0) != 0) Log(log, level, line);
  };
  return checkpoint::CheckpointStore::Open({o.checkpoint_dir, o.checkpoint_keep, std::chrono::seconds(600), quiet});
}

ElasticOptions DriverOptions(const WorkerOptions& o, const runtime::RuntimeConfig& config, WorkerMetrics* metrics,
                             checkpoint::CheckpointStore* checkpoints, LogSink log) {
  ElasticOptions eo;
  eo.metrics = metrics;
  eo.worker_id = o.worker_id;
  eo.secret = o.secret;
  eo.store_host = o.host;
  eo.store_port = static_cast<uint16_t>(o.store_port);
  eo.min_size = o.min_size;
  eo.rebuild_timeout = std::chrono::milliseconds(o.timeout_ms);
  eo.hang_factor = o.hang_factor;
  eo.hang_floor = std::chrono::milliseconds(static_cast<int64_t>(o.hang_min_seconds * 1000));
  eo.runtime = config;
  eo.runtime.backend = o.backend;
  eo.runtime.host = o.host;
  eo.runtime.timeout = std::chrono::milliseconds(o.timeout_ms);
  if (metrics) eo.runtime.gpu_traffic = metrics->gpu_traffic();
  eo.checkpoints = checkpoints;
  eo.checkpoint_every = o.checkpoint_every;
  eo.log = std::move(log);
  return eo;
}

std::shared_ptr<gpu::GpuTelemetry> OpenGpuTelemetry(const WorkerOptions& o, const LogSink& log) {
  return gpu::OpenGpuTelemetry(o.gpus, log);
}

Heartbeat::Heartbeat(std::string path) : path_(std::move(path)) {
  if (!path_.empty()) thread_ = std::thread([this] { Loop(); });
}

Heartbeat::~Heartbeat() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::Loop() {
  while (!done_) {
    std::string tmp = path_ + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%lld\n", static_cast<long long>(committed_.load()));
      std::fclose(f);
      std::rename(tmp.c_str(), path_.c_str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace ringmaster::elastic
