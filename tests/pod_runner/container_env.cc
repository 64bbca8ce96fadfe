#include "tests/pod_runner/container_env.h"

#include "base/json_path.h"

namespace ringmaster::testing {

using json = nlohmann::json;

namespace {

// metadata.labels['k'] / metadata.annotations['k'] -> ("labels", "k").
bool MapField(const std::string& path, std::string* map, std::string* key) {
  for (const char* m : {"labels", "annotations"}) {
    std::string prefix = std::string("metadata.") + m + "['";
    if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + 2 && path.compare(path.size() - 2, 2, "']") == 0) {
      *map = m;
      *key = path.substr(prefix.size(), path.size() - prefix.size() - 2);
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<std::string> PodFieldValue(const json& pod, const std::string& path) {
  std::string map, key;
  if (MapField(path, &map, &key)) {
    const json& v = At(pod, {"metadata", map.c_str(), key.c_str()});
    return v.is_string() ? v.get<std::string>() : "";
  }
  static const std::map<std::string, std::vector<const char*>> kFields = {
      {"metadata.name", {"metadata", "name"}},
      {"metadata.namespace", {"metadata", "namespace"}},
      {"metadata.uid", {"metadata", "uid"}},
      {"spec.nodeName", {"spec", "nodeName"}},
      {"spec.serviceAccountName", {"spec", "serviceAccountName"}},
      {"status.podIP", {"status", "podIP"}},
      {"status.hostIP", {"status", "hostIP"}}};
  auto it = kFields.find(path);
  if (it == kFields.end()) return InvalidArgumentError("fieldRef " + path + " is not supported by the pod runner");
  const json* at = &pod;
  for (const char* k : it->second) {
    if (!at->is_object() || !at->contains(k)) return std::string();
    at = &(*at)[k];
  }
  return at->is_string() ? at->get<std::string>() : "";
}

std::string ExpandVars(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    char next = text[i + 1];
    if (next == '$') {  // $$ -> $
      out += '$';
      i += 2;
    } else if (next == '(') {
      size_t close = text.find(')', i + 2);
      if (close == std::string::npos) {  // unterminated: kept as written
        out += text.substr(i);
        break;
      }
      std::string name = text.substr(i + 2, close - i - 2);
      auto it = vars.find(name);
      out += it != vars.end() ? it->second : "$(" + name + ")";
      i = close + 1;
    } else {
      out += '$';
      out += next;
      i += 2;
    }
  }
  return out;
}

StatusOr<EnvList> ResolveContainerEnv(const json& pod, const json& container, const KeyLookup& lookup) {
  if (container.contains("envFrom")) return UnimplementedError("envFrom is not supported by the pod runner");
  EnvList env;
  std::map<std::string, std::string> defined;
  auto set = [&](const std::string& name, const std::string& value) {
    defined[name] = value;
    for (auto& [n, v] : env) {
      if (n == name) {
        v = value;
        return;
      }
    }
    env.emplace_back(name, value);
  };
  const json& list = At(container, {"env"});
  if (list.is_null()) return env;
  if (!list.is_array()) return InvalidArgumentError("container env is not a list");
  for (const auto& e : list) {
    std::string name = StringAt(e, {"name"});
    if (name.empty()) return InvalidArgumentError("an env entry has no name: " + e.dump());
    if (!e.contains("valueFrom")) {
      set(name, ExpandVars(StringAt(e, {"value"}), defined));
      continue;
    }
    const json& from = e["valueFrom"];
    if (from.contains("fieldRef")) {
      RINGMASTER_ASSIGN_OR_RETURN(std::string v, PodFieldValue(pod, StringAt(from, {"fieldRef", "fieldPath"})));
      set(name, v);
    } else if (from.contains("secretKeyRef") || from.contains("configMapKeyRef")) {
      const bool secret = from.contains("secretKeyRef");
      const json& ref = secret ? from["secretKeyRef"] : from["configMapKeyRef"];
      const std::string kind = secret ? "Secret" : "ConfigMap";
      StatusOr<std::string> v = lookup(kind, StringAt(ref, {"name"}), StringAt(ref, {"key"}));
      if (!v.ok()) {
        bool optional = ref.is_object() && ref.value("optional", false);
        if (optional && v.status().code() == StatusCode::kNotFound) continue;
        return v.status().WithContext("env " + name + " from " + kind + " " + StringAt(ref, {"name"}) + " key " +
                                      StringAt(ref, {"key"}));
      }
      set(name, *v);
    } else if (from.contains("resourceFieldRef")) {
      return UnimplementedError("env " + name + ": resourceFieldRef is not supported by the pod runner");
    } else {
      return InvalidArgumentError("env " + name + " has an unknown valueFrom: " + from.dump());
    }
  }
  return env;
}

StatusOr<std::vector<std::string>> ContainerCommand(const json& container, const EnvList& env) {
  std::map<std::string, std::string> vars(env.begin(), env.end());
  std::vector<std::string> argv;
  for (const char* part : {"command", "args"}) {
    const json& list = At(container, {part});
    if (list.is_null()) continue;
    if (!list.is_array()) return InvalidArgumentError(std::string("container ") + part + " is not a list");
    for (const auto& a : list) {
      if (!a.is_string()) return InvalidArgumentError(std::string("container ") + part + " holds a non-string");
      argv.push_back(ExpandVars(a.get<std::string>(), vars));
    }
  }
  if (!At(container, {"command"}).is_array() || At(container, {"command"}).empty()) {
    return InvalidArgumentError("container " + StringAt(container, {"name"}) +
                                " has no command: the pod runner cannot know an image's entrypoint");
  }
  return argv;
}

}  // namespace ringmaster::testing
