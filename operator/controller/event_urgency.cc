#include "operator/controller/event_urgency.h"

#include <algorithm>
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

namespace {

bool Ready(const json& pod) {
  return kube::ConditionStatusOf(pod, api::kReadyCondition) == api::condition_status::kTrue;
}

// Terminating or finished: no longer a member-to-be.
bool Leaving(const json& pod) {
  const std::string phase = StringAt(pod, {"status", "phase"});
  return phase == "Failed" || phase == "Succeeded" || At(pod, {"metadata", "deletionTimestamp"}).is_string();
}

}  // namespace

bool PodTurnedReady(const json* old_pod, const json& pod) {
  return old_pod != nullptr && !Ready(*old_pod) && Ready(pod) && !Leaving(pod);
}

bool PodCompletesJob(const json* old_pod, const json& pod, const std::vector<kube::ObjectPtr>& job_pods) {
  if (!PodTurnedReady(old_pod, pod)) return false;
  return std::all_of(job_pods.begin(), job_pods.end(),
                     [](const kube::ObjectPtr& p) { return p == nullptr || Leaving(*p) || Ready(*p); });
}

}  // namespace ringmaster::controller
