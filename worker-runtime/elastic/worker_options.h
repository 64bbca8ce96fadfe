// WorkerOptions: what every elastic worker program needs to know about its job and itself — where its
// membership comes from, who it is, where it listens, its checkpoints and outputs — parsed once, from the
// RINGMASTER_* environment that the local launcher or the operator gives it (api::WorkerEnv), with a
// program's own flags on top. The example trainer and the Python package read the same options the same way.
//
// Thread-safety: values and pure functions.
#pragma once

#include <map>
#include <string>

#include "api/names.h"
#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/gpu/visible_gpus.h"

namespace ringmaster::elastic {

struct WorkerOptions {
  comm::Backend backend = comm::Backend::kGloo;
  // Checkpoints and outputs.
  std::string checkpoint_dir;
  int checkpoint_keep = 3;  // complete checkpoints kept (RINGMASTER_CHECKPOINT_KEEP, spec.checkpoint.keep)
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
  // The hang watchdog (hang_watchdog.h, ElasticOptions::hang_factor and hang_floor): a member that commits no step
  // for hang_factor x the recent median step, and for at least hang_min_seconds, revokes its generation.
  // RINGMASTER_HANG_FACTOR (0: off), RINGMASTER_HANG_MIN_SECONDS.
  double hang_factor = 10;
  double hang_min_seconds = 30;
  // The GPUs it uses (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES), for its GPU telemetry.
  gpu::GpuVisibility gpus;

  // Whether any membership source is configured (a file or a TrainingJob).
  bool has_membership_source() const { return !membership_file.empty() || !job_name.empty(); }
};

// Sets the fields the RINGMASTER_* environment gives (for each, the first variable present wins:
// RINGMASTER_WORKER_ID else RINGMASTER_POD_NAME; RINGMASTER_STORE_PORT else RINGMASTER_COORDINATOR_PORT;
// RINGMASTER_POD_IP is the host), and the GPU visibility variables. Errors: InvalidArgument naming the variable whose
// value is malformed.
Status ApplyWorkerEnvironment(const std::map<std::string, std::string>& env, WorkerOptions* o);

// Errors: InvalidArgument naming what is missing or out of range (no membership source, a job name without
// a namespace, no worker id / secret / store port, a bad health port), and which variable or flag gives it.
Status CheckWorkerOptions(const WorkerOptions& o);

}  // namespace ringmaster::elastic
