#include "tests/pod_runner/container_child.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ringmaster::testing {
namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Every ancestor of `path` and `path` itself ("/a/b" -> "/a", "/a/b"), outermost first.
std::vector<std::string> DirectoryChain(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (path[i - 1] != '/') out.push_back(path.substr(0, i));
    }
  }
  return out;
}

StatusOr<ChildMount> PrepareMount(const MountSpec& spec) {
  if (spec.target.empty() || spec.target[0] != '/') {
    return InvalidArgumentError("a container mount needs an absolute target: '" + spec.target + "'");
  }
  ChildMount m;
  m.spec = spec;
  m.bind_then_readonly = (spec.flags & MS_BIND) && (spec.flags & MS_RDONLY) && !(spec.flags & MS_REMOUNT);
  if (spec.create == MountSpec::Create::kDirectory) {
    m.mkdirs = DirectoryChain(spec.target);
  } else if (spec.create == MountSpec::Create::kFile) {
    m.mkdirs = DirectoryChain(spec.target);
    if (!m.mkdirs.empty()) m.mkdirs.pop_back();
  }
  return m;
}

// Fills `c` from `setup`; opens the mount namespace to join (into c.join_ns_fd) last.
Status PrepareContainer(const ContainerSetup& setup, const std::string& cwd, ChildContainer& c) {
  c.hostname = setup.hostname;
  c.root = setup.root;
  c.cwd = cwd;
  if (setup.uid) {
    c.switch_user = true;
    c.uid = *setup.uid;
    c.gid = setup.gid;
    c.groups = setup.groups;
  }
  for (const MountSpec& spec : setup.mounts) {
    RINGMASTER_ASSIGN_OR_RETURN(ChildMount m, PrepareMount(spec));
    c.mounts.push_back(std::move(m));
  }
  if (!setup.join_mount_namespace.empty()) {
    c.join_ns_fd = ::open(setup.join_mount_namespace.c_str(), O_RDONLY | O_CLOEXEC);
    if (c.join_ns_fd < 0) return InternalError(ErrnoText("open " + setup.join_mount_namespace));
  }
  return Status::Ok();
}

// The child's steps below: async-signal-safe calls only.

void WriteStderr(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

[[noreturn]] void SetupFailed(const char* step, const char* what) {
  const char* reason = strerrordesc_np(errno);
  WriteStderr("container setup failed: ");
  WriteStderr(step);
  WriteStderr(" ");
  WriteStderr(what);
  WriteStderr(": ");
  WriteStderr(reason ? reason : "unknown error");
  WriteStderr("\n");
  ::_exit(128);
}

// Joins the given mount namespace, or unshares a new one that nothing propagates out of.
void EnterMountNamespace(const ChildContainer& c) {
  if (c.join_ns_fd >= 0) {
    if (::setns(c.join_ns_fd, CLONE_NEWNS) != 0) SetupFailed("setns", "mount namespace");
    return;
  }
  if (::unshare(CLONE_NEWNS) != 0) SetupFailed("unshare", "mount namespace");
  // Nothing mounted here reaches the host; the host's unmounts still reach us.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) SetupFailed("make rslave", "/");
}

// A UTS namespace of its own with the container's host name (none asked: the parent's).
void SetHostname(const ChildContainer& c) {
  if (c.hostname.empty()) return;
  if (::unshare(CLONE_NEWUTS) != 0) SetupFailed("unshare", "UTS namespace");
  if (::sethostname(c.hostname.data(), c.hostname.size()) != 0) SetupFailed("sethostname", c.hostname.c_str());
}

// The mount point: its missing directories, and for a file bind an empty file.
void MakeMountPoint(const ChildMount& m) {
  for (const std::string& dir : m.mkdirs) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) SetupFailed("mkdir", dir.c_str());
  }
  if (m.spec.create == MountSpec::Create::kFile) {
    int fd = ::open(m.spec.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) SetupFailed("create", m.spec.target.c_str());
    ::close(fd);
  }
}

void Mount(const ChildMount& m) {
  const char* target = m.spec.target.c_str();
  const char* source = m.spec.source.empty() ? nullptr : m.spec.source.c_str();
  if (m.bind_then_readonly) {  // a read-only bind takes two calls: the bind, then its remount
    if (::mount(source, target, nullptr, MS_BIND | (m.spec.flags & MS_REC), nullptr) != 0) SetupFailed("bind", target);
    if (::mount(nullptr, target, nullptr, MS_REMOUNT | m.spec.flags, nullptr) != 0) {
      SetupFailed("remount read-only", target);
    }
    return;
  }
  const char* fstype = m.spec.fstype.empty() ? nullptr : m.spec.fstype.c_str();
  const char* data = m.spec.data.empty() ? nullptr : m.spec.data.c_str();
  if (::mount(source, target, fstype, m.spec.flags, data) != 0) SetupFailed("mount", target);
}

// chroot to the root (when there is one), then into the working directory (inside the root).
void EnterRootAndWorkingDirectory(const ChildContainer& c) {
  if (!c.root.empty()) {
    if (::chroot(c.root.c_str()) != 0) SetupFailed("chroot", c.root.c_str());
    const char* dir = c.cwd.empty() ? "/" : c.cwd.c_str();
    if (::chdir(dir) != 0) SetupFailed("chdir (the working directory)", dir);
  } else if (!c.cwd.empty() && ::chdir(c.cwd.c_str()) != 0) {
    SetupFailed("chdir (the working directory)", c.cwd.c_str());
  }
}

void SwitchUser(const ChildContainer& c) {
  if (!c.switch_user) return;
  if (::setgroups(c.groups.size(), c.groups.data()) != 0) SetupFailed("setgroups", "");
  if (::setgid(c.gid) != 0) SetupFailed("setgid", "");
  if (::setuid(c.uid) != 0) SetupFailed("setuid", "");
}

// The container part of the child: namespaces, mounts, chroot, working directory, user.
void SetUpContainer(const ChildContainer& c) {
  EnterMountNamespace(c);
  SetHostname(c);
  for (const ChildMount& m : c.mounts) {
    MakeMountPoint(m);
    Mount(m);
  }
  EnterRootAndWorkingDirectory(c);
  SwitchUser(c);
}

}  // namespace

ChildIsolation::~ChildIsolation() {
  CloseFd(net_ns_fd);
  CloseFd(container.join_ns_fd);
}

ChildIsolation::ChildIsolation(ChildIsolation&& other) noexcept { *this = std::move(other); }

ChildIsolation& ChildIsolation::operator=(ChildIsolation&& other) noexcept {
  if (this == &other) return *this;
  CloseFd(net_ns_fd);
  CloseFd(container.join_ns_fd);
  net_ns_fd = std::exchange(other.net_ns_fd, -1);
  has_container = other.has_container;
  container = std::move(other.container);
  other.container.join_ns_fd = -1;
  return *this;
}

StatusOr<ChildIsolation> PrepareChildIsolation(const ContainerSpawnOptions& options) {
  ChildIsolation isolation;
  if (options.container) {
    isolation.has_container = true;
    RINGMASTER_RETURN_IF_ERROR(PrepareContainer(*options.container, options.spawn.cwd, isolation.container));
  }
  if (!options.network_namespace.empty()) {
    isolation.net_ns_fd = ::open(options.network_namespace.c_str(), O_RDONLY | O_CLOEXEC);
    if (isolation.net_ns_fd < 0) return InternalError(ErrnoText("open network namespace " + options.network_namespace));
  }
  return isolation;
}

void SetUpChildIsolation(const ChildIsolation& isolation) {
  if (isolation.net_ns_fd >= 0 && ::setns(isolation.net_ns_fd, CLONE_NEWNET) != 0) {
    SetupFailed("setns", "network namespace");
  }
  if (isolation.has_container) SetUpContainer(isolation.container);
}

}  // namespace ringmaster::testing
