// The pieces a worker program assembles from its WorkerOptions before it trains: its membership source,
// its checkpoint store, the launcher's heartbeat and the elastic driver's options. Shared by the example
// trainer and the Python package, so both follow the same contract.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "base/log.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/elastic/worker_options.h"
#include "worker-runtime/gpu/gpu_telemetry.h"
#include "worker-runtime/membership/membership_source.h"
#include "worker-runtime/runtime/config.h"

namespace ringmaster::elastic {

class WorkerMetrics;

// The file source when o.membership_file is set, else a watch of the TrainingJob o.job_namespace/o.job_name
// (client config from o.kubeconfig, $KUBECONFIG or the pod's service account). Errors: InvalidArgument (no
// source configured), those of the client config and of starting the source.
StatusOr<std::unique_ptr<membership::MembershipSource>> OpenMembershipSource(const WorkerOptions& o,
                                                                             const LogSink& log);

// The checkpoint store under o.checkpoint_dir (keeps the last o.checkpoint_keep); null when no directory is configured.
// Errors: those of CheckpointStore::Open.
StatusOr<std::unique_ptr<checkpoint::CheckpointStore>> OpenCheckpoints(const WorkerOptions& o, const LogSink& log);

// The driver's options: the runtime configuration read at start, with the worker's options on top; the
// NCCL communicators count their bytes into metrics' GPU telemetry. Pointers are not owned and may be null.
ElasticOptions DriverOptions(const WorkerOptions& o, const runtime::RuntimeConfig& config, WorkerMetrics* metrics,
                             checkpoint::CheckpointStore* checkpoints, LogSink log);

// The worker's GPU telemetry (gpu::OpenGpuTelemetry over o.gpus), logged in one line; null on a machine
// without NVIDIA's driver or without a visible GPU.
std::shared_ptr<gpu::GpuTelemetry> OpenGpuTelemetry(const WorkerOptions& o, const LogSink& log);

// Heartbeat for the local launcher: the committed step, rewritten atomically every 100 ms into `path` until
// destroyed (nothing when `path` is empty). Set() may be called from any thread.
class Heartbeat {
 public:
  explicit Heartbeat(std::string path);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void Set(int64_t committed) { committed_ = committed; }

 private:
  void Loop();

  const std::string path_;
  std::atomic<bool> done_{false};
  std::atomic<int64_t> committed_{0};
  std::thread thread_;
};

}  // namespace ringmaster::elastic
