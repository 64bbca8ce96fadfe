#include "tests/pod_runner/container_start.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/json_path.h"
#include "tests/pod_runner/container_env.h"
#include "tests/pod_runner/container_user.h"
#include "tests/pod_runner/local_process.h"
#include "tests/pod_runner/oci_image.h"
#include "tests/pod_runner/rootfs_cache.h"
#include "tests/pod_runner/rootfs_path.h"

namespace ringmaster::testing {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

Status MakeDirectory(const std::string& path, mode_t mode) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return InternalError("cannot create " + path + ": " + ec.message());
  if (::chmod(path.c_str(), mode) != 0) return InternalError("chmod " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

bool SafeRelative(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  for (const auto& part : fs::path(path)) {
    if (part == "..") return false;
  }
  return true;
}

Status WriteVolumeFile(const std::string& dir, const std::string& path, const std::string& content, int mode) {
  if (!SafeRelative(path)) return InvalidArgumentError("volume file path " + path + " leaves its volume");
  const std::string full = dir + "/" + path;
  RINGMASTER_RETURN_IF_ERROR(MakeDirectory(fs::path(full).parent_path().string(), 0755));
  RINGMASTER_RETURN_IF_ERROR(WriteFileWithMode(full, content, static_cast<mode_t>(mode)));
  if (::chmod(full.c_str(), static_cast<mode_t>(mode)) != 0) return InternalError("chmod " + full);
  return Status::Ok();
}

// Writes the files of a configMap/secret/downwardAPI/projected volume into `dir`.
Status WriteFiles(const json& pod, const PodVolume& v, const std::string& dir, const PodStartContext& ctx) {
  for (const FileSource& s : v.sources) {
    auto mode = [&](const FileSource::Item& i) { return i.mode >= 0 ? i.mode : v.default_mode; };
    switch (s.kind) {
      case FileSource::Kind::kServiceAccountToken: {
        RINGMASTER_ASSIGN_OR_RETURN(std::string token, ctx.token(s));
        RINGMASTER_RETURN_IF_ERROR(WriteVolumeFile(dir, s.token_path, token, v.default_mode));
        break;
      }
      case FileSource::Kind::kDownwardApi:
        for (const auto& i : s.items) {
          RINGMASTER_ASSIGN_OR_RETURN(std::string value, PodFieldValue(pod, i.key));
          RINGMASTER_RETURN_IF_ERROR(WriteVolumeFile(dir, i.path, value, mode(i)));
        }
        break;
      case FileSource::Kind::kConfigMap:
      case FileSource::Kind::kSecret: {
        const std::string kind = s.kind == FileSource::Kind::kSecret ? "Secret" : "ConfigMap";
        StatusOr<std::map<std::string, std::string>> data = ctx.object_data(kind, s.name);
        if (!data.ok()) {
          if (s.optional && data.status().code() == StatusCode::kNotFound) break;
          return data.status().WithContext("volume " + v.name + ": " + kind + " " + s.name);
        }
        if (s.items.empty()) {
          for (const auto& [key, value] : *data)
            RINGMASTER_RETURN_IF_ERROR(WriteVolumeFile(dir, key, value, v.default_mode));
        }
        for (const auto& i : s.items) {
          auto it = data->find(i.key);
          if (it == data->end()) {
            if (s.optional) continue;
            return NotFoundError("volume " + v.name + ": " + kind + " " + s.name + " has no key " + i.key);
          }
          RINGMASTER_RETURN_IF_ERROR(WriteVolumeFile(dir, i.path, it->second, mode(i)));
        }
        break;
      }
    }
  }
  return Status::Ok();
}

// Makes the volume on the host; returns its host path.
StatusOr<std::string> MakeVolume(const json& pod, const PodVolume& v, const PodStartContext& ctx) {
  const std::string dir = ctx.pod_dir + "/volumes/" + v.name;
  switch (v.kind) {
    case PodVolume::Kind::kEmptyDir: RINGMASTER_RETURN_IF_ERROR(MakeDirectory(dir, 0777)); return dir;
    case PodVolume::Kind::kFiles: {
      std::error_code ec;
      fs::remove_all(dir, ec);
      RINGMASTER_RETURN_IF_ERROR(MakeDirectory(dir, 0755));
      RINGMASTER_RETURN_IF_ERROR(WriteFiles(pod, v, dir, ctx));
      return dir;
    }
    case PodVolume::Kind::kHostPath: {
      const std::string& p = v.host_path;
      const std::string& type = v.host_path_type;
      struct stat st{};
      const bool exists = ::stat(p.c_str(), &st) == 0;
      if (type == "DirectoryOrCreate" && !exists) {
        RINGMASTER_RETURN_IF_ERROR(MakeDirectory(p, 0755));
      } else if (type == "FileOrCreate" && !exists) {
        RINGMASTER_RETURN_IF_ERROR(WriteFileWithMode(p, "", 0644));
      } else if (!type.empty()) {
        const bool ok = (type == "Directory" || type == "DirectoryOrCreate") ? exists && S_ISDIR(st.st_mode)
                        : (type == "File" || type == "FileOrCreate")         ? exists && S_ISREG(st.st_mode)
                        : type == "Socket"                                   ? exists && S_ISSOCK(st.st_mode)
                        : type == "CharDevice"                               ? exists && S_ISCHR(st.st_mode)
                        : type == "BlockDevice"                              ? exists && S_ISBLK(st.st_mode)
                                                                             : false;
        if (!ok) return FailedPreconditionError("volume " + v.name + ": hostPath " + p + " is not a " + type);
      }
      return p;
    }
  }
  return InternalError("unknown volume kind");
}

void SetEnv(EnvList& env, const std::string& name, const std::string& value) {
  for (auto& [n, v] : env) {
    if (n == name) {
      v = value;
      return;
    }
  }
  env.emplace_back(name, value);
}

bool Has(const EnvList& env, const std::string& name) {
  for (const auto& [n, v] : env)
    if (n == name) return true;
  return false;
}

bool IsReadOnlyRoot(const json& container) {
  const json& v = At(container, {"securityContext", "readOnlyRootFilesystem"});
  return v.is_boolean() && v.get<bool>();
}

// A mount target: `inside` (a path in the container) placed in the overlay's merged directory, with its
// symlinks resolved in the image's rootfs.
StatusOr<std::string> Target(const std::string& rootfs, const std::string& merged, const std::string& inside) {
  RINGMASTER_ASSIGN_OR_RETURN(std::string resolved, ResolveInRoot(rootfs, inside));
  return merged + resolved;
}

StatusOr<StartedContainer> StartContainer(const json& pod, const json& container,
                                          const std::map<std::string, std::string>& volume_dirs,
                                          const std::vector<PodVolume>& volumes, const std::string& hosts_file,
                                          const std::string& hostname_file, const PodStartContext& ctx, bool restart) {
  const std::string name = StringAt(container, {"name"});
  const std::string where = "container " + name + ": ";
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<ContainerMount> mounts, PlanContainerMounts(container, volumes));
  RINGMASTER_ASSIGN_OR_RETURN(std::optional<ProbeSpec> readiness, ParseReadinessProbe(container));
  RINGMASTER_ASSIGN_OR_RETURN(std::optional<ProbeSpec> liveness, ParseLivenessProbe(container));
  StatusOr<LocalImage> image = FindLocalImage(ctx.image_dir, StringAt(container, {"image"}));
  if (!image.ok()) return image.status().WithContext(where.substr(0, where.size() - 2));
  RINGMASTER_ASSIGN_OR_RETURN(RootfsLease lease, EnsureRootfs(*image, ctx.rootfs_cache_dir, ctx.progress));
  const std::string rootfs = lease.rootfs();

  // Environment: the image's, the runtime's, the container's (container_env.h resolves the latter).
  KeyLookup lookup = [&ctx](const std::string& kind, const std::string& object,
                            const std::string& key) -> StatusOr<std::string> {
    RINGMASTER_ASSIGN_OR_RETURN(auto data, ctx.object_data(kind, object));
    auto it = data.find(key);
    if (it == data.end()) return NotFoundError(kind + " " + object + " has no key " + key);
    return it->second;
  };
  RINGMASTER_ASSIGN_OR_RETURN(EnvList container_env, ResolveContainerEnv(pod, container, lookup));
  RINGMASTER_ASSIGN_OR_RETURN(
      std::vector<std::string> argv,
      ImageContainerCommand(container, container_env, image->config.entrypoint, image->config.cmd));
  RINGMASTER_ASSIGN_OR_RETURN(ContainerUser user, ResolveContainerUser(pod, container, image->config.user,
                                                                       ReadFileInRoot(rootfs, "/etc/passwd"),
                                                                       ReadFileInRoot(rootfs, "/etc/group")));
  std::string hostname = StringAt(pod, {"spec", "hostname"});
  if (hostname.empty()) hostname = StringAt(pod, {"metadata", "name"});
  EnvList env = image->config.env;
  SetEnv(env, "HOSTNAME", hostname);
  SetEnv(env, "KUBERNETES_SERVICE_HOST", ctx.apiserver_host);
  SetEnv(env, "KUBERNETES_SERVICE_PORT", ctx.apiserver_port);
  SetEnv(env, "KUBERNETES_SERVICE_PORT_HTTPS", ctx.apiserver_port);
  if (!Has(env, "PATH")) SetEnv(env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  for (const auto& [k, v] : container_env) SetEnv(env, k, v);
  if (!Has(env, "HOME")) SetEnv(env, "HOME", user.home);

  std::string cwd = StringAt(container, {"workingDir"});
  if (cwd.empty()) cwd = image->config.working_dir;
  if (cwd.empty()) cwd = "/";

  // The container's layer: upper and work beside the merged view, all under the pod's directory. A
  // restart keeps the layer, as a container runtime does.
  const std::string layer = ctx.pod_dir + "/containers/" + name;
  const std::string upper = layer + "/upper", work = layer + "/work", merged = layer + "/rootfs";
  std::error_code ec;
  if (!restart) fs::remove_all(layer, ec);
  for (const auto& d : {upper, work, merged}) RINGMASTER_RETURN_IF_ERROR(MakeDirectory(d, 0755));
  // A working directory the image lacks is created, as the runtime does (in the layer, before the mount).
  RINGMASTER_ASSIGN_OR_RETURN(std::string cwd_inside, ResolveInRoot(rootfs, cwd));
  if (!fs::exists(rootfs + cwd_inside, ec)) RINGMASTER_RETURN_IF_ERROR(MakeDirectory(upper + cwd_inside, 0755));

  using Create = MountSpec::Create;
  ContainerSetup setup;
  setup.hostname = hostname;
  setup.root = merged;
  setup.uid = user.uid;
  setup.gid = user.gid;
  setup.groups = user.groups;
  setup.mounts.push_back({"overlay", merged, "overlay", 0,
                          "lowerdir=" + rootfs + ",upperdir=" + upper + ",workdir=" + work, Create::kNone});
  auto add = [&](const std::string& source, const std::string& inside, const std::string& fstype, unsigned long flags,
                 const std::string& data, Create create) -> Status {
    RINGMASTER_ASSIGN_OR_RETURN(std::string target, Target(rootfs, merged, inside));
    setup.mounts.push_back({source, target, fstype, flags, data, create});
    return Status::Ok();
  };
  RINGMASTER_RETURN_IF_ERROR(add("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "", Create::kDirectory));
  RINGMASTER_RETURN_IF_ERROR(add("/dev", "/dev", "", MS_BIND | MS_REC, "", Create::kDirectory));
  RINGMASTER_RETURN_IF_ERROR(add("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", Create::kDirectory));
  RINGMASTER_RETURN_IF_ERROR(add("/sys", "/sys", "", MS_BIND | MS_REC | MS_RDONLY, "", Create::kDirectory));
  RINGMASTER_RETURN_IF_ERROR(add("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", Create::kDirectory));
  RINGMASTER_RETURN_IF_ERROR(add(hosts_file, "/etc/hosts", "", MS_BIND | MS_RDONLY, "", Create::kFile));
  RINGMASTER_RETURN_IF_ERROR(add(hostname_file, "/etc/hostname", "", MS_BIND | MS_RDONLY, "", Create::kFile));
  for (const ContainerMount& m : mounts) {
    std::string source = volume_dirs.at(m.volume);
    if (!m.sub_path.empty()) {
      source += "/" + m.sub_path;
      // The kubelet creates a missing subPath of a volume as a directory.
      if (!fs::exists(source, ec)) RINGMASTER_RETURN_IF_ERROR(MakeDirectory(source, 0777));
    }
    bool read_only = m.read_only;
    for (const auto& v : volumes) read_only |= v.name == m.volume && v.kind == PodVolume::Kind::kFiles;
    const Create create = fs::is_directory(source, ec) ? Create::kDirectory : Create::kFile;
    RINGMASTER_RETURN_IF_ERROR(
        add(source, m.mount_path, "", MS_BIND | MS_REC | (read_only ? MS_RDONLY : 0), "", create));
  }
  if (IsReadOnlyRoot(container))
    setup.mounts.push_back({"", merged, "", MS_REMOUNT | MS_BIND | MS_RDONLY, "", Create::kNone});

  StartedContainer c;
  c.name = name;
  c.rootfs = std::move(lease);
  c.log_file = ctx.log_prefix + name + ".log";
  c.readiness = readiness;
  c.liveness = liveness;
  c.exec.spawn.inherit_environment = false;
  c.exec.spawn.env = env;
  c.exec.spawn.cwd = cwd;
  c.exec.spawn.in = Redirect::Null();
  c.exec.spawn.own_process_group = true;
  c.exec.container = setup;
  for (const auto& a : argv) c.command += (c.command.empty() ? "" : " ") + a;
  ContainerSpawnOptions start = c.exec;
  start.spawn.argv = argv;
  start.spawn.out = start.spawn.err = Redirect::AppendTo(c.log_file);
  RINGMASTER_ASSIGN_OR_RETURN(c.process, StartContainerProcess(start));
  // Exec probes join its mount namespace: no mounts of their own, no new UTS namespace.
  c.exec.container->mounts.clear();
  c.exec.container->hostname.clear();
  ctx.progress(std::string(restart ? "restarted" : "started") + " container " + name + " of " +
               StringAt(pod, {"metadata", "name"}) + " from image " + image->reference + " as uid " +
               std::to_string(user.uid) + " (pid " + std::to_string(c.process.pid()) + "): " + c.command);
  return c;
}

}  // namespace

StatusOr<std::vector<StartedContainer>> StartPodContainers(const json& original, const PodStartContext& ctx) {
  RINGMASTER_RETURN_IF_ERROR(CheckPodSupported(original));
  const json pod = WithServiceAccountVolume(original);
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<PodVolume> volumes, PlanPodVolumes(pod));
  // Check every container's mounts and probe before anything is made.
  for (const auto& c : pod["spec"]["containers"]) {
    RINGMASTER_RETURN_IF_ERROR(PlanContainerMounts(c, volumes).status());
    RINGMASTER_RETURN_IF_ERROR(ParseReadinessProbe(c).status());
    RINGMASTER_RETURN_IF_ERROR(ParseLivenessProbe(c).status());
  }
  RINGMASTER_RETURN_IF_ERROR(MakeDirectory(ctx.pod_dir, 0755));
  std::map<std::string, std::string> volume_dirs;
  for (const auto& v : volumes) {
    RINGMASTER_ASSIGN_OR_RETURN(volume_dirs[v.name], MakeVolume(pod, v, ctx));
  }
  std::string hostname = StringAt(pod, {"spec", "hostname"});
  if (hostname.empty()) hostname = StringAt(pod, {"metadata", "name"});
  std::string fqdn;
  if (std::string sub = StringAt(pod, {"spec", "subdomain"}); !sub.empty()) {
    fqdn = hostname + "." + sub + "." + StringAt(pod, {"metadata", "namespace"}) + ".svc.cluster.local\t";
  }
  const std::string hosts = ctx.pod_dir + "/hosts", hostname_file = ctx.pod_dir + "/hostname";
  RINGMASTER_RETURN_IF_ERROR(WriteFileWithMode(hosts,
                                               "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
                                                   StringAt(pod, {"status", "podIP"}) + "\t" + fqdn + hostname + "\n",
                                               0644));
  RINGMASTER_RETURN_IF_ERROR(WriteFileWithMode(hostname_file, hostname + "\n", 0644));

  std::vector<StartedContainer> started;  // killed by their destructors when a later one fails
  for (const auto& c : pod["spec"]["containers"]) {
    RINGMASTER_ASSIGN_OR_RETURN(StartedContainer s,
                                StartContainer(pod, c, volume_dirs, volumes, hosts, hostname_file, ctx, false));
    started.push_back(std::move(s));
  }
  return started;
}

StatusOr<StartedContainer> RestartPodContainer(const json& original, const std::string& container,
                                               const PodStartContext& ctx) {
  const json pod = WithServiceAccountVolume(original);
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<PodVolume> volumes, PlanPodVolumes(pod));
  // The volumes stay as they are (the pod's other containers use them): only their paths are needed.
  std::map<std::string, std::string> volume_dirs;
  for (const auto& v : volumes) {
    volume_dirs[v.name] = v.kind == PodVolume::Kind::kHostPath ? v.host_path : ctx.pod_dir + "/volumes/" + v.name;
  }
  for (const auto& c : pod["spec"]["containers"]) {
    if (StringAt(c, {"name"}) != container) continue;
    return StartContainer(pod, c, volume_dirs, volumes, ctx.pod_dir + "/hosts", ctx.pod_dir + "/hostname", ctx, true);
  }
  return InvalidArgumentError("the pod has no container " + container);
}

Status ExecInContainer(const ContainerSpawnOptions& exec, pid_t pid, const std::vector<std::string>& command,
                       std::chrono::seconds timeout) {
  if (command.empty() || !exec.container) return InvalidArgumentError("ExecInContainer: no command or no container");
  ContainerSpawnOptions o = exec;
  o.spawn.argv = command;
  o.spawn.out = Redirect::Pipe();
  o.spawn.err = Redirect::Pipe();
  o.container->hostname.clear();
  o.container->join_mount_namespace = "/proc/" + std::to_string(pid) + "/ns/mnt";
  RINGMASTER_ASSIGN_OR_RETURN(Subprocess p, StartContainerProcess(o));
  Subprocess::Output out = p.Communicate("", std::chrono::steady_clock::now() + timeout);
  if (out.timed_out) {
    p.Kill();
    return UnavailableError("exec " + command[0] + ": timed out after " + std::to_string(timeout.count()) + " s");
  }
  ExitStatus e = p.Wait();
  if (e.ShellCode() == 0) return Status::Ok();
  std::string text = out.err.empty() ? out.out : out.err;
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return UnavailableError("exec " + command[0] + ": " + e.ToString() + (text.empty() ? "" : ": " + text));
}

}  // namespace ringmaster::testing
