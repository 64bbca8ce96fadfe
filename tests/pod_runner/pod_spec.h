// What of a pod's spec the pod runner's image mode (pod_runner.h) can honour, planned before anything
// runs: the pod features it refuses, its volumes and each container's mounts. A pod using anything else
// fails with a reason naming it, never silently. Pure functions over the pod's JSON; thread-safe.
//
// Supported volumes: emptyDir (a directory of the pod's, medium ignored), hostPath (with its type's
// checks), configMap, secret, downwardAPI and projected (configMap, secret, downwardAPI and
// serviceAccountToken sources: the kube-api-access volume the ServiceAccount admission plugin adds).
// Refused (Unimplemented): any other volume type, subPathExpr, Bidirectional mount propagation,
// initContainers, ephemeral containers, startupProbe, grpc probes, lifecycle hooks, volumeDevices,
// tty/stdin, capabilities.add, shareProcessNamespace/hostPID/hostIPC. restartPolicy Always, OnFailure and
// Never are honoured (restart_policy.h; InvalidArgument for another value), and so are readiness and
// liveness probes (readiness_probe.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::testing {

// The service account's files in every container that automounts them.
inline constexpr char kServiceAccountMountPath[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// Unimplemented naming the first pod feature the runner cannot honour; OK otherwise.
Status CheckPodSupported(const nlohmann::json& pod);

// One file source of a configMap/secret/downwardAPI/projected volume.
struct FileSource {
  enum class Kind { kConfigMap, kSecret, kDownwardApi, kServiceAccountToken };
  struct Item {
    std::string key;   // the ConfigMap/Secret key, or the downward API's fieldPath
    std::string path;  // relative to the volume
    int mode = -1;     // -1: the volume's default mode
  };
  Kind kind = Kind::kConfigMap;
  std::string name;         // the ConfigMap or Secret
  bool optional = false;    // a missing object gives no files
  std::vector<Item> items;  // ConfigMap/Secret: empty means every key, as a file of its name
  // kServiceAccountToken:
  std::string token_path;
  std::string audience;
  int64_t expiration_seconds = 3607;
};

struct PodVolume {
  enum class Kind { kEmptyDir, kHostPath, kFiles };
  std::string name;
  Kind kind = Kind::kEmptyDir;
  std::string host_path, host_path_type;  // kHostPath
  std::vector<FileSource> sources;        // kFiles
  int default_mode = 0644;                // kFiles
};

// The pod's volumes. Unimplemented "volume NAME: volume type TYPE is not supported by the pod runner";
// InvalidArgument for a malformed entry.
StatusOr<std::vector<PodVolume>> PlanPodVolumes(const nlohmann::json& pod);

struct ContainerMount {
  std::string volume;
  std::string mount_path;  // absolute, inside the container
  std::string sub_path;    // relative, inside the volume ("" for all of it)
  bool read_only = false;
};

// The container's volumeMounts checked against the pod's volumes. InvalidArgument for an unknown volume,
// a relative mountPath or a subPath that leaves its volume; Unimplemented for subPathExpr and
// Bidirectional propagation.
StatusOr<std::vector<ContainerMount>> PlanContainerMounts(const nlohmann::json& container,
                                                          const std::vector<PodVolume>& volumes);

// The pod as the ServiceAccount admission plugin leaves it: unless automountServiceAccountToken is false,
// a projected volume with the token, the cluster's CA (ConfigMap kube-root-ca.crt) and the namespace,
// mounted read-only at kServiceAccountMountPath in every container that mounts nothing there. A pod that
// went through the plugin already has it and is returned unchanged.
nlohmann::json WithServiceAccountVolume(const nlohmann::json& pod);

}  // namespace ringmaster::testing
