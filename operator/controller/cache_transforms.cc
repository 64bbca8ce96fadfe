#include "operator/controller/cache_transforms.h"

#include <initializer_list>

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

// The members of `from` named in `keys` (those present).
json Pick(const json& from, std::initializer_list<const char*> keys) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (const char* k : keys)
    if (auto it = from.find(k); it != from.end()) out[k] = *it;
  return out;
}

json Conditions(const json& status) {
  json out = json::array();
  if (auto it = status.find("conditions"); it != status.end() && it->is_array())
    for (const auto& c : *it) out.push_back(Pick(c, {"type", "status", "reason", "lastTransitionTime"}));
  return out;
}

}  // namespace

void SlimPod(json* pod) {
  if (!pod->is_object()) return;
  const json& status = pod->value("status", json::object());
  json slim_status = Pick(status, {"phase", "podIP"});
  slim_status["conditions"] = Conditions(status);
  json containers = json::array();
  if (auto it = status.find("containerStatuses"); it != status.end() && it->is_array()) {
    for (const auto& cs : *it) {
      json c = Pick(cs, {"name"});
      if (cs.contains("state") && cs["state"].contains("terminated"))
        c["state"]["terminated"] = Pick(cs["state"]["terminated"], {"exitCode", "reason", "startedAt", "finishedAt"});
      if (cs.contains("state") && cs["state"].contains("waiting"))
        c["state"]["waiting"] = Pick(cs["state"]["waiting"], {"reason", "message"});
      containers.push_back(std::move(c));
    }
  }
  slim_status["containerStatuses"] = std::move(containers);
  json slim = {{"apiVersion", pod->value("apiVersion", "v1")}, {"kind", pod->value("kind", "Pod")}};
  slim["metadata"] = Pick(pod->value("metadata", json::object()),
                          {"name", "namespace", "uid", "resourceVersion", "labels", "annotations", "ownerReferences",
                           "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"});
  slim["spec"] = Pick(pod->value("spec", json::object()), {"nodeName"});
  slim["status"] = std::move(slim_status);
  *pod = std::move(slim);
}

void SlimNode(json* node) {
  if (!node->is_object()) return;
  json slim = {{"apiVersion", node->value("apiVersion", "v1")}, {"kind", node->value("kind", "Node")}};
  slim["metadata"] = Pick(node->value("metadata", json::object()), {"name", "resourceVersion"});
  // Taints: a configured notice taint (a spot reclaim, a maintenance drain) makes its workers leave early.
  slim["spec"] = Pick(node->value("spec", json::object()), {"taints"});
  slim["status"]["conditions"] = Conditions(node->value("status", json::object()));
  *node = std::move(slim);
}

}  // namespace ringmaster::controller
