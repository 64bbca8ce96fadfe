// A pod's processes: what ringmaster-launch reads from its environment, what each process is told on top
// of the inherited environment, and how one is started (or, for one process, exec'ed).
//
// Process i of K gets api::env::kWorkerId = api::WorkerId(pod, i), api::env::kStorePort and
// api::env::kHealthPort = api::ProcessPort(base, i) (a health port of 0, "any free port", stays 0),
// api::env::kDevice = i, and torchrun's LOCAL_RANK = i and LOCAL_WORLD_SIZE = K.
//
// Errors: ReadPodEnvironment returns InvalidArgument naming the variable (the pod name missing, a port
// that is not an integer or leaves no room for K ports); StartProcess returns base/subprocess.h's errors
// (a command that cannot be executed is not one: that process exits 127); ExecCommand returns only on
// failure (NotFound: no such program; FailedPrecondition otherwise).
// Ownership: StartProcess's Subprocess owns the process; its stdout/stderr pipes are for the caller to
// take (Subprocess::TakeStdout/TakeStderr). Thread-safety: pure functions, except the Start/Exec calls,
// which are meant for the launcher's only thread (the parent-death signal follows the starting thread).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/subprocess.h"

namespace ringmaster::launch {

// torchrun's names, for DDP scripts that read them.
inline constexpr std::string_view kLocalRankVar = "LOCAL_RANK";
inline constexpr std::string_view kLocalWorldSizeVar = "LOCAL_WORLD_SIZE";

// What the launcher needs of its own environment to start several processes.
struct PodEnvironment {
  std::string pod;          // api::env::kPodName
  int32_t store_port = 0;   // process 0's rendezvous store port
  int32_t health_port = 0;  // process 0's /metrics, /healthz and /readyz port; 0: any free port, for each
};

// From a snapshot of the environment (api::EnvironmentSnapshot()), for `processes` processes: the pod name
// (required), the store port (kStorePort, else kCoordinatorPort, else api::kCoordinatorPort) and the
// health port (kHealthPort, else api::kWorkerHealthPort). An empty variable counts as unset.
StatusOr<PodEnvironment> ReadPodEnvironment(const std::map<std::string, std::string>& environment, int processes);

// The variables process `process` of `processes` gets, replacing inherited ones of the same name.
EnvironmentList ProcessEnvironment(const PodEnvironment& pod, int process, int processes);

// Starts `command` with the inherited environment plus `env`: stdin inherited, stdout and stderr into
// pipes, in the caller's process group (a signal to the group or to PID 1's group reaches it), and
// SIGKILLed when the caller dies (parent-death signal).
StatusOr<Subprocess> StartProcess(const std::vector<std::string>& command, const EnvironmentList& env);

// Replaces this process with `command` (execvp: argv[0] looked up in PATH), environment unchanged.
Status ExecCommand(const std::vector<std::string>& command);

}  // namespace ringmaster::launch
