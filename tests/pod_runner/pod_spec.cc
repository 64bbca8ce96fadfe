#include "tests/pod_runner/pod_spec.h"

#include "base/json_path.h"
#include "tests/pod_runner/restart_policy.h"

namespace ringmaster::testing {

using json = nlohmann::json;

namespace {

constexpr char kRunnerSaVolume[] = "kube-api-access-pod-runner";

Status Unsupported(const std::string& what) { return UnimplementedError(what + " is not supported by the pod runner"); }

bool IsTrue(const json& v) { return v.is_boolean() && v.get<bool>(); }

StatusOr<std::vector<FileSource::Item>> Items(const json& items, const std::string& volume) {
  std::vector<FileSource::Item> out;
  if (items.is_null()) return out;
  if (!items.is_array()) return InvalidArgumentError("volume " + volume + ": items is not a list");
  for (const auto& i : items) {
    FileSource::Item item;
    item.key = StringAt(i, {"key"});
    if (item.key.empty()) item.key = StringAt(i, {"fieldRef", "fieldPath"});
    item.path = StringAt(i, {"path"});
    item.mode = static_cast<int>(IntAt(i, {"mode"}, -1));
    if (i.contains("resourceFieldRef")) return Unsupported("volume " + volume + ": a downwardAPI resourceFieldRef");
    if (item.key.empty() || item.path.empty())
      return InvalidArgumentError("volume " + volume + ": an item without key or path");
    out.push_back(item);
  }
  return out;
}

// A configMap/secret/downwardAPI object (of a volume or of a projected source).
StatusOr<FileSource> Source(const std::string& type, const json& spec, const std::string& volume) {
  FileSource s;
  if (type == "configMap" || type == "secret") {
    s.kind = type == "secret" ? FileSource::Kind::kSecret : FileSource::Kind::kConfigMap;
    s.name = StringAt(spec, {type == "secret" ? "secretName" : "name"});
    if (s.name.empty()) s.name = StringAt(spec, {"name"});  // a projected secret says name
    s.optional = IsTrue(At(spec, {"optional"}));
  } else if (type == "downwardAPI") {
    s.kind = FileSource::Kind::kDownwardApi;
  } else if (type == "serviceAccountToken") {
    s.kind = FileSource::Kind::kServiceAccountToken;
    s.token_path = StringAt(spec, {"path"});
    s.audience = StringAt(spec, {"audience"});
    s.expiration_seconds = IntAt(spec, {"expirationSeconds"}, 3607);
    if (s.token_path.empty()) return InvalidArgumentError("volume " + volume + ": serviceAccountToken without path");
    return s;
  } else {
    return Unsupported("volume " + volume + ": projected source " + type);
  }
  RINGMASTER_ASSIGN_OR_RETURN(s.items, Items(At(spec, {"items"}), volume));
  return s;
}

bool LeavesItsDirectory(const std::string& path) {
  if (path.empty()) return false;
  if (path[0] == '/') return true;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (path.substr(at, slash == std::string::npos ? std::string::npos : slash - at) == "..") return true;
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return false;
}

}  // namespace

Status CheckPodSupported(const json& pod) {
  const json& spec = At(pod, {"spec"});
  if (At(spec, {"initContainers"}).is_array() && !At(spec, {"initContainers"}).empty())
    return Unsupported("initContainers");
  if (At(spec, {"ephemeralContainers"}).is_array() && !At(spec, {"ephemeralContainers"}).empty()) {
    return Unsupported("ephemeral containers");
  }
  for (const char* host : {"shareProcessNamespace", "hostPID", "hostIPC"}) {
    if (IsTrue(At(spec, {host}))) return Unsupported(std::string(host) + ": true");
  }
  RINGMASTER_RETURN_IF_ERROR(ParseRestartPolicy(pod).status());
  const json& containers = At(spec, {"containers"});
  if (!containers.is_array() || containers.empty()) return InvalidArgumentError("the pod has no containers");
  for (const auto& c : containers) {
    const std::string where = "container " + StringAt(c, {"name"}) + ": ";
    for (const char* field : {"startupProbe", "lifecycle", "volumeDevices"}) {
      if (c.contains(field) && !c[field].is_null()) return Unsupported(where + field);
    }
    if (IsTrue(At(c, {"tty"})) || IsTrue(At(c, {"stdin"}))) return Unsupported(where + "tty/stdin");
    const json& add = At(c, {"securityContext", "capabilities", "add"});
    if (add.is_array() && !add.empty()) return Unsupported(where + "securityContext.capabilities.add");
    for (const char* probe : {"readinessProbe", "livenessProbe"}) {
      if (At(c, {probe}).contains("grpc")) return Unsupported(where + "a grpc " + probe);
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<PodVolume>> PlanPodVolumes(const json& pod) {
  std::vector<PodVolume> out;
  const json& volumes = At(pod, {"spec", "volumes"});
  if (volumes.is_null()) return out;
  if (!volumes.is_array()) return InvalidArgumentError("spec.volumes is not a list");
  for (const auto& v : volumes) {
    PodVolume vol;
    vol.name = StringAt(v, {"name"});
    if (vol.name.empty()) return InvalidArgumentError("a volume without a name: " + v.dump());
    std::string type;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() != "name") type = it.key();
    }
    const json& spec = At(v, {type});
    if (type == "emptyDir") {
      vol.kind = PodVolume::Kind::kEmptyDir;
    } else if (type == "hostPath") {
      vol.kind = PodVolume::Kind::kHostPath;
      vol.host_path = StringAt(spec, {"path"});
      vol.host_path_type = StringAt(spec, {"type"});
      if (vol.host_path.empty() || vol.host_path[0] != '/') {
        return InvalidArgumentError("volume " + vol.name + ": hostPath needs an absolute path");
      }
    } else if (type == "configMap" || type == "secret" || type == "downwardAPI") {
      vol.kind = PodVolume::Kind::kFiles;
      vol.default_mode = static_cast<int>(IntAt(spec, {"defaultMode"}, 0644));
      RINGMASTER_ASSIGN_OR_RETURN(FileSource s, Source(type, spec, vol.name));
      vol.sources.push_back(std::move(s));
    } else if (type == "projected") {
      vol.kind = PodVolume::Kind::kFiles;
      vol.default_mode = static_cast<int>(IntAt(spec, {"defaultMode"}, 0644));
      const json& sources = At(spec, {"sources"});
      if (!sources.is_array()) return InvalidArgumentError("volume " + vol.name + ": projected without sources");
      for (const auto& src : sources) {
        if (!src.is_object() || src.size() != 1)
          return InvalidArgumentError("volume " + vol.name + ": a malformed source");
        RINGMASTER_ASSIGN_OR_RETURN(FileSource s, Source(src.begin().key(), src.begin().value(), vol.name));
        vol.sources.push_back(std::move(s));
      }
    } else {
      return UnimplementedError("volume " + vol.name + ": volume type " + (type.empty() ? "(none)" : type) +
                                " is not supported by the pod runner");
    }
    out.push_back(std::move(vol));
  }
  return out;
}

StatusOr<std::vector<ContainerMount>> PlanContainerMounts(const json& container,
                                                          const std::vector<PodVolume>& volumes) {
  std::vector<ContainerMount> out;
  const json& mounts = At(container, {"volumeMounts"});
  if (mounts.is_null()) return out;
  if (!mounts.is_array()) return InvalidArgumentError("volumeMounts is not a list");
  const std::string where = "container " + StringAt(container, {"name"}) + ": ";
  for (const auto& m : mounts) {
    ContainerMount cm;
    cm.volume = StringAt(m, {"name"});
    cm.mount_path = StringAt(m, {"mountPath"});
    cm.sub_path = StringAt(m, {"subPath"});
    cm.read_only = IsTrue(At(m, {"readOnly"}));
    bool known = false;
    for (const auto& v : volumes) known |= v.name == cm.volume;
    if (!known) return InvalidArgumentError(where + "volumeMount of an unknown volume " + cm.volume);
    if (cm.mount_path.empty() || cm.mount_path[0] != '/') {
      return InvalidArgumentError(where + "mountPath " + cm.mount_path + " is not absolute");
    }
    if (m.contains("subPathExpr")) return Unsupported(where + "subPathExpr");
    if (StringAt(m, {"mountPropagation"}) == "Bidirectional")
      return Unsupported(where + "Bidirectional mount propagation");
    if (LeavesItsDirectory(cm.sub_path))
      return InvalidArgumentError(where + "subPath " + cm.sub_path + " leaves its volume");
    out.push_back(cm);
  }
  return out;
}

json WithServiceAccountVolume(const json& pod) {
  const json& automount = At(pod, {"spec", "automountServiceAccountToken"});
  if (automount.is_boolean() && !automount.get<bool>()) return pod;
  json out = pod;
  bool needed = false;
  for (auto& c : out["spec"]["containers"]) {
    bool has = false;
    for (const auto& m : At(c, {"volumeMounts"}).is_array() ? c["volumeMounts"] : json::array()) {
      has |= StringAt(m, {"mountPath"}) == kServiceAccountMountPath;
    }
    if (has) continue;
    needed = true;
    c["volumeMounts"].push_back(
        {{"name", kRunnerSaVolume}, {"mountPath", kServiceAccountMountPath}, {"readOnly", true}});
  }
  if (!needed) return out;
  out["spec"]["volumes"].push_back(
      {{"name", kRunnerSaVolume},
       {"projected",
        {{"defaultMode", 0644},
         {"sources",
          json::array(
              {{{"serviceAccountToken", {{"path", "token"}, {"expirationSeconds", 3607}}}},
               {{"configMap",
                 {{"name", "kube-root-ca.crt"}, {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
               {{"downwardAPI",
                 {{"items", json::array({{{"path", "namespace"},
                                          {"fieldRef",
                                           {{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}}})}}}}})}}}});
  return out;
}

}  // namespace ringmaster::testing
