#include "worker-runtime/tools/launch/pod_processes.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "api/membership.h"
#include "api/names.h"
#include "api/worker_env.h"

namespace ringmaster::launch {
namespace {

constexpr int32_t kHighestPort = 65535;

// InvalidArgument unless ports base..base+processes-1 are all valid (a base of 0 is allowed when
// `zero_means_any`: every process then asks for any free port).
Status CheckPortRange(std::string_view variable, int32_t base, int processes, bool zero_means_any) {
  if (zero_means_any && base == 0) return Status::Ok();
  const int32_t highest = kHighestPort - (processes - 1);
  if (base >= 1 && base <= highest) return Status::Ok();
  return InvalidArgumentError(std::string(variable) + "=" + std::to_string(base) + " gives " +
                              std::to_string(processes) + " processes no valid ports (base .. base+" +
                              std::to_string(processes - 1) + "): set it to 1.." + std::to_string(highest) +
                              (zero_means_any ? ", or 0 for any free port" : ""));
}

}  // namespace

StatusOr<PodEnvironment> ReadPodEnvironment(const std::map<std::string, std::string>& environment, int processes) {
  auto worker = api::WorkerEnv::FromEnvironment(environment);
  if (!worker.ok()) return worker.status();
  PodEnvironment pod;
  pod.pod = worker->pod_name;
  if (pod.pod.empty()) {
    return InvalidArgumentError(std::string(api::env::kPodName) + " is not set: --processes " +
                                std::to_string(processes) +
                                " names each process after its pod (the operator sets it from the pod's "
                                "metadata.name): set it, or run one process with --processes 1");
  }
  const bool own_store_port = worker->store_port.has_value();
  pod.store_port = worker->store_port.value_or(worker->coordinator_port.value_or(api::kCoordinatorPort));
  pod.health_port = worker->health_port.value_or(api::kWorkerHealthPort);
  RINGMASTER_RETURN_IF_ERROR(CheckPortRange(own_store_port ? api::env::kStorePort : api::env::kCoordinatorPort,
                                            pod.store_port, processes, false));
  RINGMASTER_RETURN_IF_ERROR(CheckPortRange(api::env::kHealthPort, pod.health_port, processes, true));
  return pod;
}

EnvironmentList ProcessEnvironment(const PodEnvironment& pod, int process, int processes) {
  const int32_t health = pod.health_port == 0 ? 0 : api::ProcessPort(pod.health_port, process);
  return {
      {std::string(api::env::kWorkerId), api::WorkerId(pod.pod, process)},
      {std::string(api::env::kStorePort), std::to_string(api::ProcessPort(pod.store_port, process))},
      {std::string(api::env::kHealthPort), std::to_string(health)},
      {std::string(api::env::kDevice), std::to_string(process)},
      {std::string(kLocalRankVar), std::to_string(process)},
      {std::string(kLocalWorldSizeVar), std::to_string(processes)},
  };
}

StatusOr<Subprocess> StartProcess(const std::vector<std::string>& command, const EnvironmentList& env) {
  SpawnOptions o;
  o.argv = command;
  o.env = env;
  o.in = Redirect::Inherit();
  o.out = Redirect::Pipe();
  o.err = Redirect::Pipe();
  o.own_process_group = false;
  o.parent_death_signal = SIGKILL;
  return Subprocess::Start(o);
}

Status ExecCommand(const std::vector<std::string>& command) {
  if (command.empty()) return InvalidArgumentError("no command to run");
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int error = errno;
  const std::string what = "cannot run " + command[0] + ": " + std::strerror(error);
  return error == ENOENT ? NotFoundError(what) : FailedPreconditionError(what);
}

}  // namespace ringmaster::launch
