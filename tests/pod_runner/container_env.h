// What the kubelet does to a container's definition before it runs it, for a test harness that runs pods
// as local processes (pod_runner.h): the environment (env[].value with $(VAR) references, fieldRef,
// secretKeyRef, configMapKeyRef) and the command line (command + args, $(VAR) expanded).
// Pure functions over the pod's JSON; Secrets and ConfigMaps are read through the caller's lookup.
// Thread-safe (no shared state). Test support only.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::testing {

// The value of `key` in the Secret (`kind` "Secret", decoded) or ConfigMap ("ConfigMap") named `name`
// in the pod's namespace. NotFound when the object or the key does not exist.
using KeyLookup =
    std::function<StatusOr<std::string>(const std::string& kind, const std::string& name, const std::string& key)>;

using EnvList = std::vector<std::pair<std::string, std::string>>;  // in definition order, names unique

// The container's environment as the kubelet builds it: env[] in order, a later entry of the same
// name replacing an earlier one; `value` expands $(VAR) of variables defined before it. Supported
// fieldRefs: metadata.name/namespace/uid, metadata.labels['k'], metadata.annotations['k'],
// spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP. Errors: InvalidArgument for an
// unsupported fieldRef or a malformed entry; Unimplemented for envFrom and resourceFieldRef; the
// lookup's error for a missing Secret/ConfigMap key unless the reference is `optional`.
StatusOr<EnvList> ResolveContainerEnv(const nlohmann::json& pod, const nlohmann::json& container,
                                      const KeyLookup& lookup);

// Kubernetes' $(VAR) expansion: $(NAME) becomes the variable's value when defined and stays as it is
// otherwise; $$ is a literal $.
std::string ExpandVars(const std::string& text, const std::map<std::string, std::string>& vars);

// command + args with $(VAR) expanded against `env`. InvalidArgument when the container has no
// command (an image's entrypoint cannot be known here).
StatusOr<std::vector<std::string>> ContainerCommand(const nlohmann::json& container, const EnvList& env);

// The value of a downward-API fieldPath of `pod` (the fieldRefs ResolveContainerEnv supports).
// InvalidArgument for any other path.
StatusOr<std::string> PodFieldValue(const nlohmann::json& pod, const std::string& field_path);

}  // namespace ringmaster::testing
