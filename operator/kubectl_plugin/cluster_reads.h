// The reads and the one write kubectl-ringmaster's commands make through the project's kube client, with their
// failures turned into one line each that says what to do ("trainingjob default/x not found; kubectl get
// trainingjobs -n default lists them").
//
// Errors: as each function says; every message is one line for a person. Thread-safety: as kube::Client
// (thread-safe); the functions keep no state. Ownership: they borrow the client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/membership.h"
#include "base/status.h"
#include "kube/client.h"
#include "operator/kubectl_plugin/event_list.h"

namespace ringmaster::kubectl_plugin {

// What the commands work with: a client, the namespace, and the apiserver's address (for messages).
struct Cluster {
  kube::Client* client = nullptr;
  std::string ns;
  std::string server;
};

// The failure of `doing` (e.g. "get trainingjob default/x") as one line with what to do: the apiserver cannot
// be reached, the user may not, or the apiserver's own words.
Status Explain(const Cluster& c, const Status& s, const std::string& doing);

// The TrainingJob object. NotFound: "trainingjob <ns>/<job> not found; kubectl get trainingjobs -n <ns> lists
// them"; other failures as Explain.
StatusOr<nlohmann::json> GetJob(const Cluster& c, const std::string& job);

// The job's status.membership; FailedPrecondition when it has none with members ("trainingjob ns/x has no
// members (phase P): nothing to kill").
StatusOr<api::Membership> CurrentMembers(const Cluster& c, const nlohmann::json& job);

// The Events about the job (involvedObject kind TrainingJob), and those about its worker pods (by name, so a
// replaced or deleted pod's too).
StatusOr<std::vector<EventRecord>> JobEvents(const Cluster& c, const std::string& job);
StatusOr<std::vector<EventRecord>> WorkerPodEvents(const Cluster& c, const std::string& job);

// The member killed by KillRank: its pod and uid, its ranks, and the generation it was a member of.
struct Killed {
  std::string pod, uid;
  std::vector<int32_t> ranks;  // all ranks of its pod (spec.processesPerPod)
  int64_t generation = 0;
  int32_t world_size = 0;
};

// Deletes the pod holding `rank` in `members` at once (gracePeriodSeconds 0, precondition on its uid), as
// `kubectl delete pod --force --grace-period=0` does: a hard failure, not an eviction. InvalidArgument when no
// member has the rank; NotFound when the pod is gone already; Conflict when a pod of that name with another uid
// took its place (the membership is stale: run again); other failures as Explain.
StatusOr<Killed> KillRank(const Cluster& c, const std::string& job, const api::Membership& members, int32_t rank);

// "rank 1" or "ranks 2-3".
std::string RanksText(const std::vector<int32_t>& ranks);

}  // namespace ringmaster::kubectl_plugin
