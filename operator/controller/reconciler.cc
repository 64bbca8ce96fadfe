#include "operator/controller/reconciler.h"

#include <map>

#include "api/hang_report.h"
#include "api/job_status.h"
#include "api/names.h"
#include "api/peer_report.h"
#include "api/progress_report.h"
#include "base/json_path.h"
#include "base/time_format.h"
#include "kube/api_error.h"
#include "kube/informer.h"
#include "operator/controller/cache_transforms.h"
#include "operator/controller/goodput.h"
#include "operator/controller/job_plan.h"
#include "operator/controller/job_secret.h"
#include "operator/controller/queue_admission.h"
#include "operator/controller/worker_objects.h"

namespace ringmaster::controller {

using json = nlohmann::json;

kube::GroupVersionResource TrainingJobs() {
  return {std::string(api::kGroup), std::string(api::kVersion), std::string(api::kResource), true};
}

kube::IndexFunc IndexPodsByJob() {
  return [](const json& pod) -> std::vector<std::string> {
    std::string job = StringAt(pod, {"metadata", "labels", api::kJobNameLabel});
    if (job.empty()) return {};
    return {kube::ObjectKey(StringAt(pod, {"metadata", "namespace"}), job)};
  };
}

kube::IndexFunc IndexPodsByNode() {
  return [](const json& pod) -> std::vector<std::string> {
    std::string node = StringAt(pod, {"spec", "nodeName"});
    if (node.empty()) return {};
    return {node};
  };
}

TrainingJobReconciler::TrainingJobReconciler(std::shared_ptr<kube::Client> client, const kube::Store* jobs,
                                             const kube::Store* pods, const kube::Store* nodes,
                                             const kube::Store* peer_reports, kube::EventRecorder* recorder,
                                             OperatorMetrics* metrics, LogSink log, ReconcilerOptions options,
                                             NowFn now, QueueStores queue)
    : client_(std::move(client)),
      jobs_(jobs),
      pods_(pods),
      nodes_(nodes),
      peer_reports_(peer_reports),
      recorder_(recorder),
      metrics_(metrics),
      log_(std::move(log)),
      options_(options),
      now_(std::move(now)),
      queue_(queue) {}

void TrainingJobReconciler::NoteDirty(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_since_.try_emplace(key, std::chrono::steady_clock::now());
}

namespace {

// The first taint of `node` that `wanted` names ("key" or "key=value"), as "key=value:effect"; empty if none.
std::string DisruptionTaint(const json& node, const std::vector<std::string>& wanted) {
  for (const auto& t : ArrayAt(node, {"spec", "taints"})) {
    const std::string key = StringAt(t, {"key"}), value = StringAt(t, {"value"});
    for (const auto& w : wanted) {
      if (w == key || w == key + "=" + value)
        return key + (value.empty() ? "" : "=" + value) + ":" + StringAt(t, {"effect"});
    }
  }
  return "";
}

// The state of the nodes `pods` are on (the plan looks nodes up only by a pod's spec.nodeName; a node absent from
// the cache is absent here too, i.e. gone). Only those: a reconcile's cost must not grow with the cluster's nodes.
std::map<std::string, NodeState> ObserveNodes(const kube::Store& nodes, const std::vector<json>& pods,
                                              const std::vector<std::string>& disruption_taints,
                                              std::chrono::system_clock::time_point now) {
  std::map<std::string, NodeState> out;
  for (const auto& pod : pods) {
    const std::string name = StringAt(pod, {"spec", "nodeName"});
    if (name.empty() || out.count(name)) continue;
    kube::ObjectPtr node = nodes.Get(name);
    if (!node) continue;
    NodeState state;
    state.disruption_taint = DisruptionTaint(*node, disruption_taints);
    state.ready = false;  // a node without a Ready condition has never been ready
    state.not_ready_since = now;
    for (const auto& c : ArrayAt(*node, {"status", "conditions"})) {
      if (StringAt(c, {"type"}) != api::kReadyCondition) continue;
      state.ready = StringAt(c, {"status"}) == api::condition_status::kTrue;
      state.not_ready_since = ParseRfc3339(StringAt(c, {"lastTransitionTime"})).value_or(now);
    }
    out[name] = state;
  }
  return out;
}

}  // namespace

Status TrainingJobReconciler::EnsureOwnedObjects(const json& job) {
  const std::string uid = kube::UidOf(job);
  if (applied_.OwnedObjectsEnsured(kube::KeyOf(job), uid)) return Status::Ok();
  const std::string ns = kube::NamespaceOf(job);
  struct Owned {
    kube::GroupVersionResource gvr;
    StatusOr<json> object;
  };
  // The Secret first: worker pods read it (secretKeyRef) from their first start. Create-only, so an
  // existing one (an earlier reconcile, another operator run) is never rotated under running workers.
  StatusOr<std::string> secret = NewJobSecret();
  if (!secret.ok()) return secret.status().WithContext("generating the job secret");
  std::vector<Owned> owned = {{kube::resources::Secrets(), BuildWorkerSecret(job, *secret)},
                              {kube::resources::Services(), BuildHeadlessService(job)},
                              {kube::resources::Roles(), BuildWorkerRole(job)},
                              {kube::resources::RoleBindings(), BuildWorkerRoleBinding(job)},
                              {kube::resources::ConfigMaps(), BuildPeerReports(job)}};
  // Before any pod exists, so no worker listens unprotected where the policy is enforced.
  if (options_.worker_network_policy) {
    owned.push_back({kube::resources::NetworkPolicies(), BuildWorkerNetworkPolicy(job)});
  }
  if (WorkerServiceAccountFor(job) == WorkerServiceAccountName(kube::NameOf(job))) {
    owned.push_back({kube::resources::ServiceAccounts(), BuildWorkerServiceAccount(job)});
  }
  for (auto& o : owned) {
    if (!o.object.ok()) return o.object.status();
    auto created = client_->Create(o.gvr, ns, *o.object);
    if (!created.ok() && !kube::IsAlreadyExists(created.status())) {
      std::string what = "creating " + o.gvr.resource + " " + kube::NameOf(*o.object);
      // The one owned kind an older ClusterRole lacks: say what the way out is.
      if (o.gvr.resource == kube::resources::NetworkPolicies().resource &&
          created.status().code() == StatusCode::kPermissionDenied) {
        what += " (grant networkpolicies create, or run with --worker-network-policy=false)";
      }
      return created.status().WithContext(what);
    }
  }
  applied_.MarkOwnedObjectsEnsured(kube::KeyOf(job), uid);
  return Status::Ok();
}

ReconcileResult TrainingJobReconciler::Reconcile(const std::string& key) {
  const auto started = std::chrono::steady_clock::now();
  ReconcileResult result;
  const std::string outcome = ReconcileJob(key, result);
  // controller-runtime's result label: an invalid spec is an error (requeued rate-limited); a status
  // conflict a plain requeue; success with a requeue-after timer "requeue_after".
  std::string label = outcome == "invalid" ? "error" : outcome;
  if (label == "success" && result.requeue_after) label = "requeue_after";
  metrics_->Reconciled(label, std::chrono::steady_clock::now() - started);
  return result;
}

const char* TrainingJobReconciler::ReconcileJob(const std::string& key, ReconcileResult& result) {
  // The cache, or our own newer write when the watch has not brought it back yet.
  kube::ObjectPtr job = written_.Freshest(key, jobs_->Get(key));
  if (!job) {  // deleted: its pods and owned objects go by garbage collection
    std::lock_guard<std::mutex> lock(mu_);
    dirty_since_.erase(key);
    create_errors_.erase(key);
    applied_.Forget(key);
    created_pods_.Forget(key);
    deleted_pods_.Forget(key);
    return "success";
  }
  PlanInput input = Observe(key, *job);
  // Our own creates and deletions the watch has not brought back yet (created_pods.h, deleted_pods.h); creates
  // first, so a pod created and then deleted before the watch caught up shows as deleting.
  created_pods_.Overlay(key, &input.pods, input.now);
  deleted_pods_.Overlay(key, &input.pods);
  StatusOr<JobPlan> planned = PlanJob(input);
  if (!planned.ok()) {
    // The object cannot be read or acted on as written (a field of the wrong type, min > max): an event
    // says why, and the work loop requeues it rate-limited like any other failed reconcile.
    recorder_->Event(*job, std::string(api::event_type::kWarning), std::string(api::reason::kInvalidSpec),
                     planned.status().message());
    result.status = planned.status().WithContext("job " + key + " cannot be reconciled");
    return "invalid";
  }
  return Apply(key, *job, input, *planned, result);
}

PlanInput TrainingJobReconciler::Observe(const std::string& key, const json& job) const {
  PlanInput input;
  input.job = job;
  for (const auto& pod : pods_->ByIndex(kPodsByJobIndex, key)) input.pods.push_back(*pod);
  input.now = now_();
  input.nodes = ObserveNodes(*nodes_, input.pods, options_.disruption_taints, input.now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = create_errors_.find(key); it != create_errors_.end()) input.create_error = it->second;
  }
  const std::string ns = kube::NamespaceOf(job);
  if (std::string queue = QueueNameOf(job); !queue.empty()) {
    if (queue_.workloads == nullptr) {
      input.queue = QueueAdmission{};
      input.queue->queue = queue;
      input.queue->kueue_served = false;
    } else {
      kube::ObjectPtr workload = queue_.workloads->Get(ns + "/" + WorkloadNameFor(job));
      // A Workload of an earlier job of the same name (another uid) is not this job's.
      if (workload && StringAt(*workload, {"metadata", "labels", kWorkloadJobUidLabel}) != kube::UidOf(job))
        workload = nullptr;
      input.queue = ObserveAdmission(queue, workload.get(), *queue_.flavors);
    }
  }
  if (kube::ObjectPtr reports = peer_reports_->Get(ns + "/" + api::PeerReportsName(kube::NameOf(job)))) {
    const json& data = At(*reports, {"data"});
    for (auto it = data.is_object() ? data.begin() : data.end(); it != data.end(); ++it) {
      if (!it->is_string()) continue;
      if (it.key() == api::kProgressReportKey) {  // rank 0's progress report, not a peer's (no pod has an '_')
        auto progress = api::DecodeProgressReport(it->get<std::string>());
        if (progress.ok())
          input.progress = std::move(progress).value();
        else
          log_(LogLevel::kWarning, "job " + key + ": ignoring " + progress.status().ToString());
        continue;
      }
      if (std::optional<std::string> reporter = api::HangReporterOfKey(it.key())) {  // a member's hang report
        auto hang = api::DecodeHangReport(*reporter, it->get<std::string>());
        if (hang.ok())
          input.hang_reports.push_back(std::move(hang).value());
        else
          log_(LogLevel::kWarning, "job " + key + ": ignoring " + hang.status().ToString());
        continue;
      }
      auto report = api::DecodePeerReport(it.key(), it->get<std::string>());
      if (report.ok())
        input.peer_reports.push_back(std::move(report).value());
      else
        log_(LogLevel::kWarning, "job " + key + ": ignoring " + report.status().ToString());
    }
  }
  return input;
}

const char* TrainingJobReconciler::Apply(const std::string& key, const json& job, const PlanInput& input,
                                         const JobPlan& plan, ReconcileResult& result) {
  const auto now = input.now;
  const std::string ns = kube::NamespaceOf(job);
  if (!ns.empty() && !plan.delete_job) {
    Status ensured = EnsureOwnedObjects(job);
    if (ensured.ok() && WantsGang(job)) ensured = EnsurePodGroup(job);
    if (!ensured.ok()) {
      result.status = ensured;
      return "error";
    }
  }

  // Status first: if it conflicts (someone wrote the job since our cache saw it) nothing else happens
  // and the reconcile repeats on fresh data, so a membership generation is published exactly once.
  if (plan.status) {
    Status written = WriteStatus(key, job, *plan.status);
    if (!written.ok()) {
      result.status = written.WithContext("updating status of " + key);
      return kube::IsConflict(written) ? "requeue" : "error";
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_since_.erase(key);
  }

  Status first_error = ApplyPods(key, job, plan);
  if (input.queue && input.queue->kueue_served) {
    Status synced = SyncWorkload(key, job, input, plan);
    if (!synced.ok() && first_error.ok()) first_error = synced.WithContext("syncing the Workload of " + key);
  }
  for (const auto& e : plan.events) recorder_->Event(job, e.type, e.reason, e.message);
  if (plan.delete_job) {
    Status deleted = DeleteJob(job);
    if (!deleted.ok() && first_error.ok()) first_error = deleted;
  }
  result.status = first_error;
  if (plan.requeue_at) {
    auto delay = *plan.requeue_at - now;
    result.requeue_after = std::max<std::chrono::nanoseconds>(std::chrono::milliseconds(10), delay);
  }
  return first_error.ok() ? "success" : "error";
}

Status TrainingJobReconciler::WriteStatus(const std::string& key, const json& job, const json& status) {
  json updated = job;
  updated["status"] = status;
  auto written = client_->UpdateStatus(TrainingJobs(), kube::NamespaceOf(job), updated);
  if (!written.ok()) return written.status();
  SlimJob(&*written);  // as the job cache keeps it (controller.cc)
  written_.Wrote(key, kube::ResourceVersionOf(job), *written);
  if (auto recovery = CompletedRecovery(At(job, {"status"}), status)) metrics_->RecoveryCompleted(*recovery);
  const json& old_membership = At(job, {"status", "membership"});
  const json& new_membership = At(status, {"membership"});
  if (IntAt(new_membership, {"generation"}) != IntAt(old_membership, {"generation"})) {
    metrics_->MembershipPublished(StringAt(new_membership, {"reason"}));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = dirty_since_.find(key);
    if (it != dirty_since_.end()) metrics_->PublishLatency(std::chrono::steady_clock::now() - it->second);
    log_(LogLevel::kInfo,
         "job " + key + ": " + StringAt(new_membership, {"reason"}) + ", " + StringAt(new_membership, {"message"}));
  }
  return Status::Ok();
}

Status TrainingJobReconciler::ApplyPods(const std::string& key, const json& job, const JobPlan& plan) {
  const std::string ns = kube::NamespaceOf(job);
  Status first_error;
  std::string refused;  // the apiserver's words for the first pod it refused
  for (const auto& pod : plan.creates) {
    // Strict: a template field the apiserver does not know refuses the pod (FailedCreate names it), never dropped.
    auto created = client_->Create(kube::resources::Pods(), ns, pod, kube::WriteOptions::Strict());
    if (created.ok()) {
      SlimPod(&*created);  // as the pod cache keeps it (controller.cc)
      created_pods_.Created(key, *created, now_());
      continue;
    }
    // AlreadyExists: our cache lags a create made before CreatedPods could know (another operator process, a
    // record that timed out); the stable name keeps it single.
    if (kube::IsAlreadyExists(created.status())) continue;
    if (first_error.ok()) first_error = created.status().WithContext("creating pod " + kube::NameOf(pod));
    if (refused.empty()) {
      refused = "cannot create worker pod " + kube::NameOf(pod) + ": " + created.status().message();
      recorder_->Event(job, std::string(api::event_type::kWarning), std::string(api::reason::kFailedCreate), refused);
    }
  }
  if (!plan.creates.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (refused.empty())
      create_errors_.erase(key);
    else
      create_errors_[key] = refused;
  }
  for (const auto& d : plan.deletes) {
    kube::DeleteOptions options;
    options.precondition_uid = d.uid;
    if (d.force) options.grace_period_seconds = 0;
    Status deleted = client_->Delete(kube::resources::Pods(), ns, d.name, options);
    if (!deleted.ok() && !kube::IsNotFound(deleted) && !kube::IsConflict(deleted) && first_error.ok()) {
      first_error = deleted.WithContext("deleting pod " + d.name);
    } else if (deleted.ok()) {
      deleted_pods_.Deleted(key, d.uid, now_());
      log_(LogLevel::kInfo, "job " + key + ": deleted pod " + d.name + (d.force ? " (forced)" : "") + ": " + d.why);
    }
  }
  return first_error;
}

Status TrainingJobReconciler::EnsurePodGroup(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(json group, BuildPodGroup(job));
  const std::string uid = kube::UidOf(job);
  if (applied_.PodGroupApplied(kube::KeyOf(job), uid, group)) return Status::Ok();
  const kube::GroupVersionResource pod_groups{"scheduling.x-k8s.io", "v1alpha1", "podgroups", true};
  auto applied = client_->Apply(pod_groups, kube::NamespaceOf(job), group, "ringmaster-operator", /*force=*/true);
  if (!applied.ok()) {
    std::string what = "applying PodGroup " + kube::NameOf(group);
    if (kube::IsNotFound(applied.status()))
      what +=
          " (spec.scheduling.gang needs scheduler-plugins' PodGroup CRD, scheduling.x-k8s.io/v1alpha1, and its "
          "Coscheduling scheduler: install them, or remove spec.scheduling.gang)";
    recorder_->Event(job, std::string(api::event_type::kWarning), std::string(api::reason::kGangSchedulingUnavailable),
                     what + ": " + applied.status().message());
    return applied.status().WithContext(what);
  }
  applied_.MarkPodGroupApplied(kube::KeyOf(job), uid, std::move(group));
  return Status::Ok();
}

StatusOr<WorkloadPriority> TrainingJobReconciler::ResolvePriority(const json& job) {
  WorkloadPriority priority;
  // Kueue's order (jobframework.ExtractPriority): the WorkloadPriorityClass label, else the pods' PriorityClass.
  if (std::string name = StringAt(job, {"metadata", "labels", kWorkloadPriorityClassLabel}); !name.empty()) {
    auto wpc = client_->Get(WorkloadPriorityClasses(), "", name);
    if (!wpc.ok()) {
      if (kube::IsNotFound(wpc.status()))
        return InvalidArgumentError("WorkloadPriorityClass " + name + " (label " +
                                    std::string(kWorkloadPriorityClassLabel) +
                                    ") does not exist: create it or fix the label");
      return wpc.status().WithContext("reading WorkloadPriorityClass " + name);
    }
    priority.class_ref = {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", name}};
    priority.value = static_cast<int32_t>(IntAt(*wpc, {"value"}));
    return priority;
  }
  if (std::string name = StringAt(job, {"spec", "template", "spec", "priorityClassName"}); !name.empty()) {
    auto pc = client_->Get(PriorityClasses(), "", name);
    if (!pc.ok()) {
      if (kube::IsNotFound(pc.status()))
        return InvalidArgumentError("PriorityClass " + name + " (spec.template.spec.priorityClassName) does not exist");
      return pc.status().WithContext("reading PriorityClass " + name);
    }
    priority.class_ref = {{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", name}};
    priority.value = static_cast<int32_t>(IntAt(*pc, {"value"}));
  }
  return priority;
}

Status TrainingJobReconciler::SyncWorkload(const std::string& key, const json& job, const PlanInput& input,
                                           const JobPlan& plan) {
  RINGMASTER_ASSIGN_OR_RETURN(const api::TrainingJobSpec decoded, api::DecodeTrainingJobSpec(At(job, {"spec"})));
  RINGMASTER_ASSIGN_OR_RETURN(const JobSpec spec, ParseJobSpec(decoded));
  const std::string ns = kube::NamespaceOf(job);
  const std::string phase = plan.status ? StringAt(*plan.status, {"phase"}) : StringAt(job, {"status", "phase"});
  const bool finished = phase == api::phase::kSucceeded || phase == api::phase::kFailed;
  if (!input.queue->workload_exists) {
    if (finished) return Status::Ok();  // nothing to queue any more
    auto priority = ResolvePriority(job);
    if (!priority.ok()) {
      recorder_->Event(job, std::string(api::event_type::kWarning), std::string(api::reason::kQueued),
                       "cannot create its Workload: " + priority.status().message());
      return priority.status();
    }
    RINGMASTER_ASSIGN_OR_RETURN(json workload, BuildWorkload(job, spec, *priority));
    auto created = client_->Create(Workloads(), ns, workload);
    if (!created.ok() && !kube::IsAlreadyExists(created.status())) {
      recorder_->Event(job, std::string(api::event_type::kWarning), std::string(api::reason::kQueued),
                       "cannot create its Workload: " + created.status().message());
      return created.status().WithContext("creating Workload " + kube::NameOf(workload));
    }
    if (created.ok()) {
      recorder_->Event(job, std::string(api::event_type::kNormal), std::string(api::reason::kQueued),
                       "created Workload " + kube::NameOf(workload) + " in LocalQueue " + input.queue->queue);
      log_(LogLevel::kInfo, "job " + key + ": created Workload " + kube::NameOf(workload));
    }
    return Status::Ok();
  }
  kube::ObjectPtr workload = queue_.workloads->Get(ns + "/" + WorkloadNameFor(job));
  if (!workload) return Status::Ok();  // gone since Observe: the next reconcile recreates it
  // Pods that still exist after this reconcile's deletions: a terminating one still holds its GPUs.
  const bool pods_left = !input.pods.empty();
  const WorkloadPlan wp = PlanWorkload(job, spec, *workload, phase, pods_left, FormatRfc3339(input.now));
  const std::string name = kube::NameOf(*workload);
  if (wp.spec_patch) {
    auto patched = client_->Patch(Workloads(), ns, name, kube::PatchType::kMerge, *wp.spec_patch);
    if (!patched.ok()) return patched.status().WithContext("updating Workload " + name + " (" + wp.why + ")");
    log_(LogLevel::kInfo, "job " + key + ": updated Workload " + name + ": " + wp.why);
  }
  if (wp.status_patch) {
    kube::PatchOptions options;
    options.subresource = "status";
    auto patched = client_->Patch(Workloads(), ns, name, kube::PatchType::kMerge, *wp.status_patch, options);
    if (!patched.ok())
      return patched.status().WithContext("updating the status of Workload " + name + " (" + wp.why + ")");
    log_(LogLevel::kInfo, "job " + key + ": Workload " + name + ": " + wp.why);
  }
  return Status::Ok();
}

Status TrainingJobReconciler::DeleteJob(const json& job) {
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  options.precondition_uid = kube::UidOf(job);
  Status deleted = client_->Delete(TrainingJobs(), kube::NamespaceOf(job), kube::NameOf(job), options);
  if (kube::IsNotFound(deleted)) return Status::Ok();
  return deleted;
}

}  // namespace ringmaster::controller
