#include "tests/pod_runner/container_process.h"

#include "tests/pod_runner/container_child.h"

namespace ringmaster::testing {

StatusOr<Subprocess> StartContainerProcess(const ContainerSpawnOptions& options) {
  if (options.spawn.before_exec) {
    return InvalidArgumentError("StartContainerProcess: the spawn options bring a before_exec hook of their own");
  }
  RINGMASTER_ASSIGN_OR_RETURN(ChildIsolation isolation, PrepareChildIsolation(options));
  SpawnOptions spawn = options.spawn;
  if (options.container) {
    spawn.cwd.clear();  // entered by the child's container steps (inside the root, before the user switch)
    if (!options.container->root.empty()) spawn.lookup_program_in_child = true;  // PATH inside the root
  }
  spawn.before_exec = [&isolation] { SetUpChildIsolation(isolation); };
  return Subprocess::Start(spawn);  // the parent's namespace files close with `isolation`
}

}  // namespace ringmaster::testing
