#include "operator/controller/event_urgency.h"

#include <string>

#include "api/job_status.h"
#include "base/json_path.h"
#include "kube/client.h"

namespace ringmaster::controller {

using json = nlohmann::json;

bool PodInTrouble(const json* old_pod, const json& pod) {
  const std::string phase = StringAt(pod, {"status", "phase"});
  if (phase == "Failed" || phase == "Succeeded" || phase == "Unknown") return true;
  if (At(pod, {"metadata", "deletionTimestamp"}).is_string()) return true;
  if (kube::ConditionStatusOf(pod, api::kDisruptionTargetCondition) == api::condition_status::kTrue) return true;
  return old_pod != nullptr &&
         kube::ConditionStatusOf(*old_pod, api::kReadyCondition) == api::condition_status::kTrue &&
         kube::ConditionStatusOf(pod, api::kReadyCondition) != api::condition_status::kTrue;
}

}  // namespace ringmaster::controller
