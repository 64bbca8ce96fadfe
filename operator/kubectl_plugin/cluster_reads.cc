#include "operator/kubectl_plugin/cluster_reads.h"

#include <algorithm>

#include "api/names.h"
#include "base/json_path.h"
#include "kube/api_error.h"
#include "kube/resource.h"
#include "operator/controller/reconciler.h"

namespace ringmaster::kubectl_plugin {

namespace {

using nlohmann::json;

std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

Status Explain(const Cluster& c, const Status& s, const std::string& doing) {
  const std::string message = OneLine(s.message());
  switch (s.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return Status(s.code(), "cannot reach the apiserver at " + c.server + " to " + doing + ": " + message +
                                  "; check that the cluster is up and that --kubeconfig/--context name it");
    case StatusCode::kUnauthenticated:
      return Status(s.code(), "the apiserver at " + c.server + " did not accept your credentials to " + doing + ": " +
                                  message + "; refresh them in the kubeconfig");
    case StatusCode::kPermissionDenied:
      return Status(s.code(), "not allowed to " + doing + ": " + message +
                                  "; ask for a role that allows it (kubectl auth can-i lists what you may do)");
    default: return Status(s.code(), "cannot " + doing + ": " + message);
  }
}

StatusOr<json> GetJob(const Cluster& c, const std::string& job) {
  auto got = c.client->Get(controller::TrainingJobs(), c.ns, job);
  if (kube::IsNotFound(got.status())) {
    return NotFoundError("trainingjob " + c.ns + "/" + job + " not found; kubectl get trainingjobs -n " + c.ns +
                         " lists them");
  }
  if (!got.ok()) return Explain(c, got.status(), "get trainingjob " + c.ns + "/" + job);
  return got;
}

StatusOr<api::Membership> CurrentMembers(const Cluster& c, const json& job) {
  const std::string name = c.ns + "/" + StringAt(job, {"metadata", "name"});
  auto m = api::MembershipOfJob(job);
  if (!m.ok())
    return FailedPreconditionError("trainingjob " + name +
                                   " has a membership that cannot be read: " + OneLine(m.status().message()));
  if (!m->has_value() || (*m)->members.empty()) {
    std::string phase = StringAt(job, {"status", "phase"});
    return FailedPreconditionError("trainingjob " + name + " has no members (phase " +
                                   (phase.empty() ? std::string("Pending") : phase) +
                                   "): nothing to kill; kubectl ringmaster status " +
                                   StringAt(job, {"metadata", "name"}) + " -n " + c.ns + " shows why");
  }
  return **m;
}

StatusOr<std::vector<EventRecord>> JobEvents(const Cluster& c, const std::string& job) {
  kube::ListOptions options;
  options.field_selector = "involvedObject.kind=" + std::string(api::kKind) + ",involvedObject.name=" + job;
  auto list = c.client->ListAll(kube::resources::Events(), c.ns, options);
  if (!list.ok()) return Explain(c, list.status(), "list the events of trainingjob " + c.ns + "/" + job);
  return ParseEventList(*list);
}

StatusOr<std::vector<EventRecord>> WorkerPodEvents(const Cluster& c, const std::string& job) {
  kube::ListOptions options;
  options.field_selector = "involvedObject.kind=Pod";
  auto list = c.client->ListAll(kube::resources::Events(), c.ns, options);
  if (!list.ok()) return Explain(c, list.status(), "list the events of pods in namespace " + c.ns);
  std::vector<EventRecord> out;
  for (auto& e : ParseEventList(*list)) {
    if (IsWorkerPodName(job, e.object)) out.push_back(std::move(e));
  }
  return out;
}

std::string RanksText(const std::vector<int32_t>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  if (ranks.empty()) return "no rank";
  return "ranks " + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
}

StatusOr<Killed> KillRank(const Cluster& c, const std::string& job, const api::Membership& members, int32_t rank) {
  const api::Member* victim = nullptr;
  for (const auto& m : members.members) {
    if (m.rank == rank) victim = &m;
  }
  if (victim == nullptr) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " is not in generation " +
                                std::to_string(members.generation) + " of trainingjob " + c.ns + "/" + job +
                                " (world size " + std::to_string(members.world_size()) + ": ranks 0-" +
                                std::to_string(members.world_size() - 1) + ")");
  }
  Killed k;
  k.pod = victim->pod;
  k.uid = victim->uid;
  k.generation = members.generation;
  k.world_size = members.world_size();
  for (const auto& m : members.members) {
    if (m.pod == k.pod) k.ranks.push_back(m.rank);
  }
  std::sort(k.ranks.begin(), k.ranks.end());
  kube::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = k.uid;
  Status deleted = c.client->Delete(kube::resources::Pods(), c.ns, k.pod, options);
  const std::string pod = "pod " + c.ns + "/" + k.pod;
  if (kube::IsNotFound(deleted)) {
    return NotFoundError(pod + " (" + RanksText(k.ranks) + " of generation " + std::to_string(k.generation) +
                         ") is gone already; the operator is replacing it");
  }
  if (kube::IsConflict(deleted)) {
    return ConflictError(pod + " is no longer the one of generation " + std::to_string(k.generation) + " (uid " +
                         k.uid + "): it was replaced; run the command again");
  }
  if (!deleted.ok()) return Explain(c, deleted, "delete " + pod);
  return k;
}

}  // namespace ringmaster::kubectl_plugin
