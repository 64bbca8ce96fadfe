// Starting one process as a container runtime starts a container's process, for the pod runner
// (container_start.h runs a pod's containers with it, local_process.h a pod's process in the pod's network
// namespace): base/subprocess.h's spawn options plus what sets the process apart from the host -- a network
// namespace to join and a filesystem view of its own (mount and UTS namespaces, mounts, chroot, user). The
// parent prepares every step before fork; the child runs them between fork and exec through Subprocess's
// before_exec seam, with async-signal-safe calls only (container_child.h).
//
// In the child, in this order: join `network_namespace`; with `container`, join its mount namespace
// `join_mount_namespace` (a file such as /proc/PID/ns/mnt) or else unshare a new one whose mounts
// propagate to no one (rslave); with `hostname`, a UTS namespace of its own with that host name; every
// mount of `mounts` in order; chroot to `root` (then the working directory, default "/", is a path inside
// it); setgroups(`groups`), setgid(`gid`), setuid(`uid`) when a uid is given. With a root, a program name
// without a '/' is looked up in the child's PATH inside the root (as execvp would, after the chroot). Needs
// CAP_SYS_ADMIN (and CAP_SETUID/CAP_SETGID for a uid). The namespaces end with their last process: nothing
// to unmount.
//
// Errors: StartContainerProcess returns InvalidArgument for a mount whose target is not absolute or spawn
// options that bring a before_exec hook of their own, Internal when a namespace to join cannot be opened,
// and Subprocess::Start's errors. A child whose setup fails writes "container setup failed: STEP WHAT:
// REASON" on its stderr and exits 128 (as one that cannot enter its working directory does).
// Ownership: the namespace files are opened and closed within StartContainerProcess; the Subprocess owns
// the process. Thread-safe (no shared state; the child makes only async-signal-safe calls). Test support
// (the pod runner) only.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/subprocess.h"

namespace ringmaster::testing {

// One mount(2) made in the child's own mount namespace (ContainerSetup).
struct MountSpec {
  enum class Create { kNone, kDirectory, kFile };
  std::string source;             // "" for none (a remount)
  std::string target;             // a path as the child sees it before its chroot
  std::string fstype;             // "" for a bind or a remount
  unsigned long flags = 0;        // MS_*. MS_BIND|MS_RDONLY without MS_REMOUNT binds, then remounts the bind read-only
  std::string data;               // filesystem options ("lowerdir=...,upperdir=...", "mode=1777")
  Create create = Create::kNone;  // kDirectory: mkdir -p target first; kFile: mkdir -p its parent, then
                                  // create it empty (a bind target for a file). Paths are used as given:
                                  // resolve symlinks inside a root before (the caller's job).
};

// A process in a filesystem view of its own (see the top of this file for the order of the steps).
struct ContainerSetup {
  std::string join_mount_namespace;  // "": a new mount namespace
  std::string hostname;              // "": the parent's UTS namespace
  std::vector<MountSpec> mounts;
  std::string root;  // "": no chroot
  std::optional<uid_t> uid;
  gid_t gid = 0;              // used with a uid
  std::vector<gid_t> groups;  // supplementary groups, used with a uid
};

struct ContainerSpawnOptions {
  // The process: argv, environment, streams, group. With a container, `spawn.cwd` is a path inside its
  // root (entered after the chroot, before the user switch). Its before_exec must be empty: the container
  // steps take that seam.
  SpawnOptions spawn;
  // A network namespace to join (a file such as /run/netns/NAME or /proc/PID/ns/net, opened before fork),
  // before anything of `container`: the process and what it execs see only that namespace's interfaces.
  std::string network_namespace;
  std::optional<ContainerSetup> container;  // set: the process starts in a filesystem view of its own
};

// Starts the process (see the top of this file).
StatusOr<Subprocess> StartContainerProcess(const ContainerSpawnOptions& options);

}  // namespace ringmaster::testing
