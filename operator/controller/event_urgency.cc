#include "operator/controller/event_urgency.h"

#include <string>
#include <string_view>

#include "api/job_status.h"
#include "base/json_path.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

// The status of the pod's condition `type` ("" when it has none).
std::string ConditionStatus(const json& pod, std::string_view type) {
  for (const auto& c : ArrayAt(pod, {"status", "conditions"}))
    if (StringAt(c, {"type"}) == type) return StringAt(c, {"status"});
  return "";
}

}  // namespace

bool PodInTrouble(const json* old_pod, const json& pod) {
  const std::string phase = StringAt(pod, {"status", "phase"});
  if (phase == "Failed" || phase == "Succeeded" || phase == "Unknown") return true;
  if (At(pod, {"metadata", "deletionTimestamp"}).is_string()) return true;
  if (ConditionStatus(pod, api::kDisruptionTargetCondition) == api::condition_status::kTrue) return true;
  return old_pod != nullptr && ConditionStatus(*old_pod, api::kReadyCondition) == api::condition_status::kTrue &&
         ConditionStatus(pod, api::kReadyCondition) != api::condition_status::kTrue;
}

}  // namespace ringmaster::controller
