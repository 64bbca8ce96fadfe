#include "controller/membership.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "base/json_path.h"
#include "base/time_format.h"

namespace ringmaster::controller {

using Clock = std::chrono::system_clock;

std::string ReasonName(ChangeReason reason) {
  switch (reason) {
    case ChangeReason::kJobStarted: return "JobStarted";
    case ChangeReason::kWorkerJoined: return "WorkerJoined";
    case ChangeReason::kScaledUp: return "ScaledUp";
    case ChangeReason::kWorkerFailed: return "WorkerFailed";
    case ChangeReason::kWorkerRemoved: return "WorkerRemoved";
    case ChangeReason::kNodeLost: return "NodeLost";
    case ChangeReason::kPeerUnreachable: return "PeerUnreachable";
    case ChangeReason::kScaledDown: return "ScaledDown";
  }
  return "Unknown";
}

namespace {

// Removal reasons in order of urgency: the first one present names the change.
constexpr ChangeReason kRemovalPriority[] = {ChangeReason::kNodeLost, ChangeReason::kPeerUnreachable,
                                             ChangeReason::kWorkerFailed, ChangeReason::kWorkerRemoved,
                                             ChangeReason::kScaledDown};

ChangeReason RemovalReason(const WorkerObservation* w) {
  if (w == nullptr) return ChangeReason::kWorkerRemoved;  // the pod is gone
  if (w->node_lost) return ChangeReason::kNodeLost;
  if (w->unreachable) return ChangeReason::kPeerUnreachable;
  if (w->failed) return ChangeReason::kWorkerFailed;
  if (w->beyond_desired) return ChangeReason::kScaledDown;
  return ChangeReason::kWorkerRemoved;  // no longer Ready, or being deleted
}

bool Eligible(const WorkerObservation& w) {
  return (w.ready || w.finishing) && !w.failed && !w.node_lost && !w.beyond_desired && !w.unreachable;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

MembershipDecision DecideMembership(const api::Membership& current, const std::vector<WorkerObservation>& workers,
                                    const MembershipPolicy& policy, Clock::time_point now) {
  MembershipDecision decision;
  std::map<std::string, const WorkerObservation*> by_pod;
  for (const auto& w : workers) by_pod[w.pod] = &w;
  const int32_t processes = std::max<int32_t>(1, policy.processes_per_pod);

  // Survivors keep their relative order; everyone else in the current record leaves, with a reason. A pod
  // is the unit: all its ranks stay or all leave (survivors holds every surviving rank, survivor_pods
  // their pods in rank order).
  std::vector<api::Member> survivors;
  std::vector<std::string> survivor_pods;
  std::map<ChangeReason, std::vector<std::string>> removed;
  for (const auto& m : current.members) {
    auto it = by_pod.find(m.pod);
    const WorkerObservation* w = it == by_pod.end() ? nullptr : it->second;
    if (w != nullptr && w->uid != m.uid) w = nullptr;  // same name, new pod: the old worker is gone
    if (w != nullptr && Eligible(*w)) {
      api::Member kept = m;
      kept.address = w->address;
      kept.node = w->node;
      survivors.push_back(kept);
      if (std::find(survivor_pods.begin(), survivor_pods.end(), m.pod) == survivor_pods.end()) survivor_pods.push_back(m.pod);
    } else {
      std::vector<std::string>& names = removed[RemovalReason(w)];
      if (std::find(names.begin(), names.end(), m.pod) == names.end()) names.push_back(m.pod);
    }
  }

  // Joiners: eligible workers not in the record, in worker-index order.
  std::vector<const WorkerObservation*> joiners;
  bool someone_still_starting = false;
  for (const auto& w : workers) {
    bool member = false;
    for (const auto& s : survivors) member |= (s.pod == w.pod && s.uid == w.uid);
    if (member) continue;
    if (Eligible(w)) joiners.push_back(&w);
    else if (!w.failed && !w.node_lost && !w.beyond_desired && !w.unreachable && !w.ready) someone_still_starting = true;
  }
  std::sort(joiners.begin(), joiners.end(), [](auto* a, auto* b) { return a->index < b->index; });

  // A job whose world emptied (suspended, or every worker lost) starts again under the gang rule.
  const bool started = current.world_size() > 0;
  const int32_t ready_total = static_cast<int32_t>(survivor_pods.size() + joiners.size());
  if (!started && ready_total < policy.min_workers) {
    decision.waiting_for = "waiting for " + std::to_string(policy.min_workers) + " Ready workers to start (gang minimum); " +
                           std::to_string(ready_total) + " Ready";
    return decision;
  }

  // Joins are batched: they wait until the batch window has passed since the earliest joiner became
  // Ready (for the first generation: since the gang minimum was reached), unless nobody else is coming.
  bool admit_joiners = !joiners.empty();
  if (admit_joiners && removed.empty() && someone_still_starting) {
    std::vector<Clock::time_point> since;
    for (auto* j : joiners) since.push_back(j->ready_since);
    std::sort(since.begin(), since.end());
    size_t pivot = started ? 0 : static_cast<size_t>(std::max<int32_t>(0, policy.min_workers - 1 - static_cast<int32_t>(survivor_pods.size())));
    pivot = std::min(pivot, since.size() - 1);
    Clock::time_point due = since[pivot] + policy.join_batch_window;
    if (now < due) {
      admit_joiners = false;
      decision.recheck_at = due;
      if (!started) decision.waiting_for = "gang minimum reached; starting when the join window ends or every worker is Ready";
    }
  }
  // Whole groups only: the world is the largest multiple of the group that survivors and admitted joiners
  // fill. Joiners beyond it are spares; survivors beyond it (a loss left a partial group) leave, the
  // highest ranks first, so the others keep their ranks. In pods: a group of multiple_of ranks is
  // multiple_of / gcd(multiple_of, processes) pods.
  const int32_t multiple = std::max<int32_t>(1, policy.multiple_of);
  const int32_t group = multiple / std::gcd(multiple, processes);
  const int32_t offered = static_cast<int32_t>(survivor_pods.size() + (admit_joiners ? joiners.size() : 0));
  const int32_t world = offered / group * group;
  while (static_cast<int32_t>(survivor_pods.size()) > world) {
    const std::string pod = survivor_pods.back();
    survivor_pods.pop_back();
    std::erase_if(survivors, [&pod](const api::Member& m) { return m.pod == pod; });
    decision.dropped.insert(decision.dropped.begin(), pod);
  }
  const size_t admitted = admit_joiners ? static_cast<size_t>(world) - survivor_pods.size() : 0;
  if (admit_joiners && admitted < joiners.size()) {
    decision.spares = static_cast<int32_t>(joiners.size() - admitted);
    const int32_t more = group - (offered - world);
    decision.spares_waiting = std::to_string(decision.spares) + " Ready worker" + (decision.spares == 1 ? "" : "s") +
                              " waiting for " + std::to_string(more) + " more worker" + (more == 1 ? "" : "s") +
                              " to complete a group of " + std::to_string(group) + " (spec.replicas.multipleOf)";
  }
  if (removed.empty() && decision.dropped.empty() && admitted == 0) return decision;

  // A joining pod takes `processes` consecutive ranks, its processes in order.
  std::vector<api::Member> joining;
  std::vector<std::string> joined;
  for (size_t i = 0; i < admitted; ++i) {
    for (int32_t process = 0; process < processes; ++process) {
      api::Member m{joiners[i]->pod, joiners[i]->uid, 0, joiners[i]->address, joiners[i]->node};
      m.process = process;
      joining.push_back(std::move(m));
    }
    joined.push_back(joiners[i]->pod);
  }
  auto survive = [&survivors](const api::Member& m) -> std::optional<api::Member> {
    for (const auto& s : survivors)
      if (s.pod == m.pod && s.process == m.process) return s;
    return std::nullopt;
  };
  api::Membership next = api::NextMembership(
      current, survive, std::move(joining),
      [&policy](const api::Member& rank0) { return api::CoordinatorAddress(rank0, policy.coordinator_port); });

  std::optional<ChangeReason> reason;
  for (ChangeReason r : kRemovalPriority) {
    if (!reason && removed.count(r)) reason = r;
  }
  if (!reason && !decision.dropped.empty()) reason = ChangeReason::kScaledDown;  // a world not in whole groups
  if (!reason) {
    bool scale_up = false;
    for (size_t i = 0; i < admitted; ++i) scale_up |= joiners[i]->for_scale_up;
    reason = !started ? ChangeReason::kJobStarted : (scale_up ? ChangeReason::kScaledUp : ChangeReason::kWorkerJoined);
  }
  next.reason = ReasonName(*reason);
  std::vector<std::string> parts;
  for (ChangeReason r : kRemovalPriority) {
    if (removed.count(r)) parts.push_back(ReasonName(r) + ": " + JoinNames(removed[r]));
  }
  if (!decision.dropped.empty()) {
    parts.push_back("left to keep whole groups of " + std::to_string(group) + ": " + JoinNames(decision.dropped));
  }
  if (!joined.empty()) parts.push_back("joined: " + JoinNames(joined));
  next.message = "generation " + std::to_string(next.generation) + ", world size " + std::to_string(next.world_size()) +
                 (processes > 1 ? " in " + std::to_string(next.pod_count()) + (next.pod_count() == 1 ? " pod" : " pods") : "") + " (" + JoinNames(parts) + ")";
  next.changed_at = FormatRfc3339(now);
  if (next.world_size() == 0 && !decision.dropped.empty()) {
    decision.waiting_for = "fewer Ready workers than one group of " + std::to_string(group) +
                           " (spec.replicas.multipleOf); waiting for " + std::to_string(policy.min_workers) +
                           " Ready workers to start again (gang minimum)";
  }
  decision.next = std::move(next);
  return decision;
}

}  // namespace ringmaster::controller
