// The child's half of container_process.h: a container's steps, prepared by the parent before fork
// (PrepareChildIsolation: every path computed, every namespace file opened) and run by the child between
// fork and exec (SetUpChildIsolation, called from Subprocess's before_exec).
//
// Errors: PrepareChildIsolation returns InvalidArgument for a mount whose target is not absolute and
// Internal when a namespace file cannot be opened (nothing stays open then). SetUpChildIsolation does not
// return on a failed step: it writes "container setup failed: STEP WHAT: REASON" on stderr and exits 128.
// Ownership: a ChildIsolation owns the namespace files it opened (close-on-exec), closed by its destructor
// in the parent; the child never returns to run it (it execs or exits).
// Thread-safety: SetUpChildIsolation makes only async-signal-safe calls (no allocation), so it may run in
// the forked child of a multithreaded process. One ChildIsolation is used by one thread. Test support only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"
#include "tests/pod_runner/container_process.h"

namespace ringmaster::testing {

// One mount of a container, ready for the child.
struct ChildMount {
  MountSpec spec;
  std::vector<std::string> mkdirs;  // ancestors first
  bool bind_then_readonly = false;
};

// A container's setup, ready for the child (ContainerSetup).
struct ChildContainer {
  int join_ns_fd = -1;  // -1: a new mount namespace
  std::string hostname;
  std::vector<ChildMount> mounts;
  std::string root;
  std::string cwd;  // "": none (with a root: "/" inside it)
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

// Everything the child of one StartContainerProcess does before exec.
class ChildIsolation {
 public:
  ChildIsolation() = default;
  ~ChildIsolation();
  ChildIsolation(ChildIsolation&& other) noexcept;
  ChildIsolation& operator=(ChildIsolation&& other) noexcept;
  ChildIsolation(const ChildIsolation&) = delete;
  ChildIsolation& operator=(const ChildIsolation&) = delete;

  int net_ns_fd = -1;  // a network namespace to join first; -1: the parent's
  bool has_container = false;
  ChildContainer container;  // with has_container
};

// The child's steps for `options`; with a container, its working directory is options.spawn.cwd (the
// caller then starts the process with no cwd of Subprocess's: the child enters it after the chroot).
StatusOr<ChildIsolation> PrepareChildIsolation(const ContainerSpawnOptions& options);

// In the child: the network namespace, then the container's namespaces, mounts, root, working directory
// and user. Async-signal-safe; does not return on a failure (exit 128).
void SetUpChildIsolation(const ChildIsolation& isolation);

}  // namespace ringmaster::testing
