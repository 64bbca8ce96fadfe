// What a worker that cannot go on (failure_class.h: a sticky CUDA error, a GPU library that cannot be loaded,
// a refused configuration) leaves for whoever replaces it before it exits: one paragraph in its container's
// termination message file (api/worker_termination.h) naming the worker, its node, its GPU and the error. The
// kubelet puts it in the pod's status, where the operator reads it into the job's status.recentFailures;
// ringmaster-run prints it and ends the run.
//
//   RINGMASTER_TERMINATION_LOG  the file (unset: Kubernetes' /dev/termination-log; ringmaster-run gives each worker
//                               one of its own, tests set it)
//   RINGMASTER_NODE_NAME        the node (the operator's downward API: spec.nodeName), else NODE_NAME
//
// A program then exits with kWorkerFailedExitCode (a C++ worker) or raises (the Python package's WorkerFailed).
//
// Thread-safety: pure functions, but for the write of the file.
#pragma once

#include <map>
#include <string>

#include "api/worker_termination.h"
#include "base/status.h"
#include "worker-runtime/gpu/visible_gpus.h"

namespace ringmaster::elastic {

// The exit status of a worker that wrote its termination message because no rebuild could repair what ended it.
inline constexpr int kWorkerFailedExitCode = 3;

// The node from the environment (RINGMASTER_NODE_NAME, else NODE_NAME); empty when neither is set.
std::string NodeFromEnvironment(const std::map<std::string, std::string>& env);
// The termination message file from the environment (RINGMASTER_TERMINATION_LOG, else /dev/termination-log).
std::string TerminationLogPath(const std::map<std::string, std::string>& env);

// CUDA device `device` as a termination message names it: "2", with the physical GPU's UUID when NVML (the
// driver's) can tell it ("2 (GPU-8932f937-...)"); empty for -1 (no GPU, or not yet chosen).
std::string DescribeGpu(int device, const gpu::GpuVisibility& visibility);

// Writes FormatTerminationMessage(t) to `path` (replacing what was there) and returns what it wrote.
// Errors: Unavailable naming the path when it cannot be written (no container around the process).
StatusOr<std::string> WriteTerminationMessage(const std::string& path, const api::WorkerTermination& t);

}  // namespace ringmaster::elastic
