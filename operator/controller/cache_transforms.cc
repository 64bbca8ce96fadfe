#include "operator/controller/cache_transforms.h"

#include <initializer_list>
#include <string>

#include "api/job_status.h"
#include "api/names.h"
#include "api/training_job.h"
#include "api/worker_termination.h"
#include "base/json_path.h"
#include "kube/informer.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

constexpr char kLastAppliedAnnotation[] = "kubectl.kubernetes.io/last-applied-configuration";

// The members of `from` named in `keys` (those present).
json Pick(const json& from, std::initializer_list<std::string_view> keys) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (std::string_view k : keys)
    if (auto it = from.find(k); it != from.end()) out[std::string(k)] = *it;
  return out;
}

// Of a pod's conditions, those the plan reads (job_plan.cc's ViewPod): Ready (status and since when),
// DisruptionTarget while True (its reason) and PodScheduled while False (the scheduler's reason and message).
// Initialized, ContainersReady and a PodScheduled=True say nothing the plan uses, at ~80 bytes each per pod.
json PodConditions(const json& status) {
  json out = json::array();
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return out;
  for (const auto& c : *it) {
    if (!c.is_object()) continue;
    const std::string type = c.value("type", ""), st = c.value("status", "");
    if (type == api::kReadyCondition) {
      out.push_back(Pick(c, {"type", "status", "lastTransitionTime"}));
    } else if (type == api::kDisruptionTargetCondition && st == api::condition_status::kTrue) {
      out.push_back(Pick(c, {"type", "status", "reason", "lastTransitionTime"}));
    } else if (type == api::kPodScheduledCondition && st == api::condition_status::kFalse) {
      out.push_back(Pick(c, {"type", "status", "reason", "message"}));
    }
  }
  return out;
}

}  // namespace

void SlimPod(json* pod) {
  if (!pod->is_object()) return;
  const json& status = At(*pod, {"status"});
  json slim_status = Pick(status, {"phase", "podIP"});
  slim_status["conditions"] = PodConditions(status);
  json containers = json::array();
  if (auto it = status.find("containerStatuses"); it != status.end() && it->is_array()) {
    for (const auto& cs : *it) {
      // Only a container that has ended or cannot start says something to the plan; a running one is
      // already in the pod's phase and Ready condition.
      json c = Pick(cs, {"name"});
      if (cs.contains("state") && cs["state"].contains("terminated")) {
        c["state"]["terminated"] =
            Pick(cs["state"]["terminated"], {"exitCode", "reason", "startedAt", "finishedAt", "message"});
        // A termination message is up to 4 KiB; the plan keeps api::kFailureMessageKept bytes of it.
        if (json& m = c["state"]["terminated"]; m.contains("message") && m["message"].is_string())
          m["message"] = api::TruncateUtf8(m["message"].get_ref<const std::string&>(), api::kFailureMessageKept);
      }
      if (cs.contains("state") && cs["state"].contains("waiting"))
        c["state"]["waiting"] = Pick(cs["state"]["waiting"], {"reason", "message"});
      if (c.contains("state")) containers.push_back(std::move(c));
    }
  }
  slim_status["containerStatuses"] = std::move(containers);
  const json& meta = At(*pod, {"metadata"});
  json slim = json::object();
  slim["metadata"] =
      Pick(meta, {"name", "namespace", "uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"});
  // Of the labels and annotations (the template's are copied onto every pod), only the operator's own.
  json labels = Pick(At(meta, {"labels"}), {api::kJobNameLabel, api::kWorkerIndexLabel});
  if (!labels.empty()) slim["metadata"]["labels"] = std::move(labels);
  json annotations = Pick(At(meta, {"annotations"}), {api::kCreatedForAnnotation});
  if (!annotations.empty()) slim["metadata"]["annotations"] = std::move(annotations);
  slim["spec"] = Pick(At(*pod, {"spec"}), {"nodeName"});
  slim["status"] = std::move(slim_status);
  *pod = std::move(slim);
}

void SlimJob(json* job) {
  kube::StripManagedFields(job);
  auto meta = job->find("metadata");
  if (meta == job->end() || !meta->is_object()) return;
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) return;
  annotations->erase(kLastAppliedAnnotation);
  if (annotations->empty()) meta->erase(annotations);
}

void SlimNode(json* node) {
  if (!node->is_object()) return;
  json slim = {{"apiVersion", node->value("apiVersion", "v1")}, {"kind", node->value("kind", "Node")}};
  slim["metadata"] = Pick(node->value("metadata", json::object()), {"name", "resourceVersion"});
  // Taints: a configured notice taint (a spot reclaim, a maintenance drain) makes its workers leave early.
  slim["spec"] = Pick(node->value("spec", json::object()), {"taints"});
  json conditions = json::array();
  const json& status = node->value("status", json::object());
  if (auto it = status.find("conditions"); it != status.end() && it->is_array())
    for (const auto& c : *it)
      if (c.is_object() && c.value("type", "") == api::kReadyCondition)
        conditions.push_back(Pick(c, {"type", "status", "lastTransitionTime"}));
  slim["status"]["conditions"] = std::move(conditions);
  *node = std::move(slim);
}

}  // namespace ringmaster::controller
