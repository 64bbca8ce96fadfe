// Starting a pod's containers from their images, as a kubelet and a container runtime do, for the pod
// runner's image mode (pod_runner.h). For a pod:
//
//   * its volumes are made under `pod_dir` (pod_spec.h): emptyDir a directory (0777), hostPath checked
//     or created by its type, configMap/secret/downwardAPI/projected files written (the service-account
//     token from `token`, a TokenRequest bound to the pod);
//   * each container's image is found (oci_image.h) and unpacked once (rootfs_cache.h); the container gets
//     an overlayfs over that rootfs with a writable layer of its own under `pod_dir` (remounted read-only
//     for readOnlyRootFilesystem), /proc, the host's /dev with a private tmpfs /dev/shm, the host's /sys
//     (read-only), a tmpfs /tmp, /etc/hosts and /etc/hostname of the pod, and its volume mounts; then it is
//     chrooted, switched to its user (container_user.h) and exec'ed with Kubernetes' command rules and
//     environment (container_env.h): the image's Env, HOSTNAME, KUBERNETES_SERVICE_HOST/PORT (the
//     apiserver) and HOME, overlaid by the container's env. It has its own mount and UTS namespaces (the
//     pod's hostname) and the host's network, so it serves on the pod's loopback IP. The namespaces,
//     mounts, chroot and user switch are container_process.h's.
//
// Errors: Unimplemented/InvalidArgument for what no retry can fix (pod_spec.h, container_user.h, the
// command rules); NotFound for a missing image, ConfigMap or Secret and FailedPrecondition for a missing
// hostPath (a later retry may find them); Internal for local failures. On an error no container is left
// running. Thread-safe (no shared state); blocks while an image is unpacked.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/subprocess.h"
#include "tests/pod_runner/container_process.h"
#include "tests/pod_runner/pod_spec.h"
#include "tests/pod_runner/readiness_probe.h"
#include "tests/pod_runner/rootfs_cache.h"

namespace ringmaster::testing {

// The data of ConfigMap (`kind` "ConfigMap") or Secret ("Secret", values decoded) `name` in the pod's
// namespace. NotFound when it does not exist.
using ObjectData =
    std::function<StatusOr<std::map<std::string, std::string>>(const std::string& kind, const std::string& name)>;

struct PodStartContext {
  std::string image_dir;                       // the OCI archives
  std::string rootfs_cache_dir;                // unpacked images (rootfs_cache.h)
  std::string pod_dir;                         // this pod's volumes and container layers (created)
  std::string log_prefix;                      // container NAME logs to <log_prefix>NAME.log
  std::string apiserver_host, apiserver_port;  // KUBERNETES_SERVICE_HOST/PORT
  ObjectData object_data;
  std::function<StatusOr<std::string>(const FileSource& token)> token;  // a serviceAccountToken source's token
  std::function<void(const std::string&)> progress;
};

struct StartedContainer {
  std::string name;
  Subprocess process;  // its own process group
  std::string log_file;
  std::string command;  // for progress lines
  std::optional<ProbeSpec> readiness;
  std::optional<ProbeSpec> liveness;
  ContainerSpawnOptions exec;  // how to run a command inside it (ExecInContainer)
  RootfsLease rootfs;          // its image's root, held while the container may run (rootfs_cache.h)
};

// Starts every container of `pod` (spec.containers, in order). The pod is taken as the ServiceAccount
// admission plugin leaves it (WithServiceAccountVolume).
StatusOr<std::vector<StartedContainer>> StartPodContainers(const nlohmann::json& pod, const PodStartContext& ctx);

// Starts container `container` of `pod` again after it exited (a restart in place): the pod's volumes,
// /etc/hosts and /etc/hostname are reused as StartPodContainers made them, and so is the container's
// writable layer (what it wrote there survives, as with a container runtime). Errors as StartPodContainers;
// InvalidArgument when the pod has no such container.
StatusOr<StartedContainer> RestartPodContainer(const nlohmann::json& pod, const std::string& container,
                                               const PodStartContext& ctx);

// Runs `command` inside the running container whose process is `pid` and whose StartedContainer::exec
// is `exec` (its mount namespace, root, user, environment and working directory), as an exec probe or
// `kubectl exec` would: OK when it exits 0 within `timeout`, else Unavailable with its exit status and
// output. Blocks for at most `timeout`.
Status ExecInContainer(const ContainerSpawnOptions& exec, pid_t pid, const std::vector<std::string>& command,
                       std::chrono::seconds timeout);

}  // namespace ringmaster::testing
