#include "operator/controller/queue_admission.h"

#include <algorithm>
#include <set>

#include "api/job_status.h"
#include "api/names.h"
#include "base/json_path.h"
#include "kube/client.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

// Kueue's Workload condition types and the reasons this operator writes (kueue.x-k8s.io/v1beta2).
constexpr std::string_view kQuotaReserved = "QuotaReserved";
constexpr std::string_view kAdmittedCondition = "Admitted";
constexpr std::string_view kEvictedCondition = "Evicted";
constexpr std::string_view kRequeued = "Requeued";
constexpr std::string_view kFinished = "Finished";

bool ConditionTrue(const json& workload, std::string_view type) {
  const json* c = kube::FindCondition(workload, type);
  return c != nullptr && StringAt(*c, {"status"}) == api::condition_status::kTrue;
}

// Sets a metav1.Condition in `conditions` as apimeta.SetStatusCondition does: lastTransitionTime moves only
// when the status flips.
void SetCondition(json& conditions, std::string_view type, std::string_view status, std::string_view reason,
                  const std::string& message, const std::string& now, int64_t observed_generation) {
  for (auto& c : conditions) {
    if (StringAt(c, {"type"}) != type) continue;
    if (StringAt(c, {"status"}) != status) c["lastTransitionTime"] = now;
    c["status"] = status;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = observed_generation;
    return;
  }
  conditions.push_back({{"type", type},
                        {"status", status},
                        {"reason", reason},
                        {"message", message},
                        {"lastTransitionTime", now},
                        {"observedGeneration", observed_generation}});
}

// Kueue truncates condition messages to 32 KiB; ours are short, but Kueue's eviction message is copied.
std::string Truncated(std::string message) {
  constexpr size_t kMax = 32 * 1024;
  if (message.size() > kMax) message.resize(kMax);
  return message;
}

// The pod set the job asks for: desired + spares pods, minCount = min when fewer (partial admission).
json WorkerPodSet(const json& job, const JobSpec& spec) {
  json template_spec = At(job, {"spec", "template"});
  json pod_set = {{"name", kWorkerPodSet}, {"count", spec.desired_workers + spec.spares}, {"template", template_spec}};
  if (spec.min_workers < spec.desired_workers + spec.spares) pod_set["minCount"] = spec.min_workers;
  return pod_set;
}

}  // namespace

kube::GroupVersionResource Workloads() { return {"kueue.x-k8s.io", "v1beta2", "workloads", true}; }
kube::GroupVersionResource ResourceFlavors() { return {"kueue.x-k8s.io", "v1beta2", "resourceflavors", false}; }
kube::GroupVersionResource WorkloadPriorityClasses() {
  return {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", false};
}
kube::GroupVersionResource PriorityClasses() { return {"scheduling.k8s.io", "v1", "priorityclasses", false}; }

std::string QueueNameOf(const json& job) { return StringAt(job, {"metadata", "labels", kQueueNameLabel}); }

std::string WorkloadNameFor(const json& job) {
  constexpr size_t kMaxName = 253;
  const std::string prefix = "trainingjob-";
  const std::string suffix = "-" + StringAt(job, {"metadata", "uid"}).substr(0, 5);
  std::string name = StringAt(job, {"metadata", "name"});
  name.resize(std::min(name.size(), kMaxName - prefix.size() - suffix.size()));
  return prefix + name + suffix;
}

QueueAdmission ObserveAdmission(std::string queue, const json* workload, const kube::Store& flavors) {
  QueueAdmission a;
  a.queue = std::move(queue);
  if (workload == nullptr) {
    a.reason = api::reason::kQueued;
    a.message = "creating its Workload in LocalQueue " + a.queue;
    return a;
  }
  const json& wl = *workload;
  a.workload_exists = true;
  a.quota_reserved = ConditionTrue(wl, kQuotaReserved);
  a.evicted = ConditionTrue(wl, kEvictedCondition);
  const json& admission = At(wl, {"status", "admission"});
  a.cluster_queue = StringAt(admission, {"clusterQueue"});
  if (a.evicted) {
    const json* c = kube::FindCondition(wl, kEvictedCondition);
    a.reason = StringAt(*c, {"reason"});
    a.message = StringAt(*c, {"message"});
    return a;
  }
  if (!ConditionTrue(wl, kAdmittedCondition) || !admission.is_object()) {
    const json* c = kube::FindCondition(wl, kQuotaReserved);
    a.reason = c != nullptr ? StringAt(*c, {"reason"}) : "Pending";
    a.message = c != nullptr && !StringAt(*c, {"message"}).empty()
                    ? StringAt(*c, {"message"})
                    : "waiting for Kueue to admit Workload " + StringAt(wl, {"metadata", "name"});
    return a;
  }
  // Admitted: the count Kueue gave the worker pod set (partial admission may give fewer than asked), and the
  // node labels and tolerations of the flavours it assigned (podset.FromAssignment).
  std::set<std::string> seen;
  for (const auto& psa : ArrayAt(admission, {"podSetAssignments"})) {
    if (StringAt(psa, {"name"}) != kWorkerPodSet) continue;
    a.admitted_count = static_cast<int32_t>(IntAt(psa, {"count"}, -1));
    if (a.admitted_count < 0) {
      for (const auto& ps : ArrayAt(wl, {"spec", "podSets"}))
        if (StringAt(ps, {"name"}) == kWorkerPodSet) a.admitted_count = static_cast<int32_t>(IntAt(ps, {"count"}));
    }
    const json& assigned = At(psa, {"flavors"});
    for (auto it = assigned.is_object() ? assigned.begin() : assigned.end(); it != assigned.end(); ++it) {
      if (!it->is_string() || !seen.insert(it->get<std::string>()).second) continue;
      kube::ObjectPtr flavor = flavors.Get(it->get<std::string>());
      if (!flavor) {
        a.missing_flavor = it->get<std::string>();
        continue;
      }
      const json& labels = At(*flavor, {"spec", "nodeLabels"});
      for (auto l = labels.is_object() ? labels.begin() : labels.end(); l != labels.end(); ++l)
        a.node_selector[l.key()] = *l;
      for (const auto& t : ArrayAt(*flavor, {"spec", "tolerations"})) a.tolerations.push_back(t);
    }
  }
  a.admitted = a.missing_flavor.empty();
  a.reason = api::reason::kAdmitted;
  a.message = "admitted by ClusterQueue " + a.cluster_queue + " (" + std::to_string(a.admitted_count) + " pods)";
  if (!a.missing_flavor.empty()) a.message += "; waiting to read ResourceFlavor " + a.missing_flavor;
  return a;
}

void ApplyAdmissionToPod(const QueueAdmission& admission, json* pod) {
  json& spec = (*pod)["spec"];
  for (auto it = admission.node_selector.begin(); it != admission.node_selector.end(); ++it)
    spec["nodeSelector"][it.key()] = *it;
  for (const auto& t : admission.tolerations) {
    json& tolerations = spec["tolerations"];
    if (!tolerations.is_array()) tolerations = json::array();
    if (std::find(tolerations.begin(), tolerations.end(), t) == tolerations.end()) tolerations.push_back(t);
  }
}

StatusOr<json> BuildWorkload(const json& job, const JobSpec& spec, const WorkloadPriority& priority) {
  if (!At(job, {"spec", "template", "spec"}).is_object())
    return InvalidArgumentError("spec.template.spec is missing: the Workload's pod set needs it");
  const std::string name = StringAt(job, {"metadata", "name"});
  json wl = {{"apiVersion", Workloads().group + "/" + Workloads().version},
             {"kind", "Workload"},
             {"metadata",
              {{"name", WorkloadNameFor(job)},
               {"namespace", StringAt(job, {"metadata", "namespace"})},
               {"labels",
                {{std::string(api::kJobNameLabel), name},
                 {std::string(kWorkloadJobUidLabel), StringAt(job, {"metadata", "uid"})}}},
               {"ownerReferences", json::array({{{"apiVersion", api::kApiVersion},
                                                 {"kind", api::kKind},
                                                 {"name", name},
                                                 {"uid", StringAt(job, {"metadata", "uid"})},
                                                 {"controller", true},
                                                 {"blockOwnerDeletion", true}}})}}},
             {"spec",
              {{"queueName", QueueNameOf(job)},
               {"podSets", json::array({WorkerPodSet(job, spec)})},
               {"active", !spec.suspend}}}};
  if (!priority.class_ref.is_null()) {
    wl["spec"]["priorityClassRef"] = priority.class_ref;
    wl["spec"]["priority"] = priority.value;
  }
  return wl;
}

WorkloadPlan PlanWorkload(const json& job, const JobSpec& spec, const json& workload, const std::string& phase,
                          bool pods_left, const std::string& now) {
  WorkloadPlan plan;
  const std::string rv = StringAt(workload, {"metadata", "resourceVersion"});
  const int64_t generation = IntAt(workload, {"metadata", "generation"});
  const bool reserved = ConditionTrue(workload, kQuotaReserved);
  const bool finished_job = phase == api::phase::kSucceeded || phase == api::phase::kFailed;

  // The job's end gives the quota back (Kueue's workload.Finish).
  if (finished_job) {
    if (ConditionTrue(workload, kFinished)) return plan;
    json conditions = ArrayAt(workload, {"status", "conditions"});
    const bool ok = phase == api::phase::kSucceeded;
    SetCondition(conditions, kFinished, api::condition_status::kTrue, ok ? "Succeeded" : "Failed",
                 ok ? "the TrainingJob succeeded" : "the TrainingJob failed", now, generation);
    plan.status_patch = json{{"metadata", {{"resourceVersion", rv}}}, {"status", {{"conditions", conditions}}}};
    plan.why = "the job finished";
    return plan;
  }

  // Evicted: once no pod of the job is left, clear the admission so Kueue can queue it again
  // (jobframework's step 6: SetRequeuedCondition + UnsetQuotaReservationWithCondition).
  if (ConditionTrue(workload, kEvictedCondition) && reserved && !pods_left) {
    const json* evicted = kube::FindCondition(workload, kEvictedCondition);
    const std::string reason = StringAt(*evicted, {"reason"});
    const std::string message = Truncated(StringAt(*evicted, {"message"}));
    json conditions = ArrayAt(workload, {"status", "conditions"});
    const bool requeue = reason == "Preempted" || reason == "NodeFailures";
    SetCondition(conditions, kRequeued, requeue ? api::condition_status::kTrue : api::condition_status::kFalse, reason,
                 message, now, generation);
    SetCondition(conditions, kQuotaReserved, api::condition_status::kFalse, "Pending", message, now, generation);
    SetCondition(conditions, kAdmittedCondition, api::condition_status::kFalse, "NoReservation",
                 "The workload has no reservation", now, generation);
    plan.status_patch =
        json{{"metadata", {{"resourceVersion", rv}}}, {"status", {{"conditions", conditions}, {"admission", nullptr}}}};
    plan.why = "its workers are gone after the eviction (" + reason + "): giving the quota back";
    return plan;
  }

  // The spec: active follows spec.runPolicy.suspend; the pod set follows the job's size while no quota is held
  // (Kueue refuses pod-set changes of a Workload that holds quota).
  json spec_patch = json::object();
  const bool active =
      At(workload, {"spec", "active"}).is_boolean() ? At(workload, {"spec", "active"}).get<bool>() : true;
  if (active == spec.suspend) spec_patch["active"] = !spec.suspend;
  if (!reserved) {
    const json want = WorkerPodSet(job, spec);
    const json& pod_sets = ArrayAt(workload, {"spec", "podSets"});
    const json have = pod_sets.size() == 1 ? pod_sets[0] : json();
    // The count and minCount only: the apiserver defaults the stored template, so comparing it would patch forever.
    if (IntAt(have, {"count"}) != IntAt(want, {"count"}) ||
        IntAt(have, {"minCount"}, -1) != IntAt(want, {"minCount"}, -1)) {
      spec_patch["podSets"] = json::array({want});
    }
  }
  if (!spec_patch.empty()) {
    plan.spec_patch = json{{"metadata", {{"resourceVersion", rv}}}, {"spec", spec_patch}};
    plan.why =
        spec_patch.contains("podSets") ? "the job's size changed while queued" : "spec.runPolicy.suspend changed";
  }
  return plan;
}

}  // namespace ringmaster::controller
