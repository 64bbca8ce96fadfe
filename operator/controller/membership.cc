#include "operator/controller/membership.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "api/job_status.h"
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
    case ChangeReason::kDisrupted: return "Disrupted";
    case ChangeReason::kHung: return std::string(api::reason::kHung);
  }
  return "Unknown";
}

bool IsLoss(ChangeReason reason) {
  switch (reason) {
    case ChangeReason::kWorkerFailed:
    case ChangeReason::kWorkerRemoved:
    case ChangeReason::kNodeLost:
    case ChangeReason::kPeerUnreachable: return true;
    case ChangeReason::kJobStarted:
    case ChangeReason::kWorkerJoined:
    case ChangeReason::kScaledUp:
    case ChangeReason::kScaledDown:
    case ChangeReason::kDisrupted:
    case ChangeReason::kHung: return false;
  }
  return false;
}

bool IsFailure(ChangeReason reason) { return IsLoss(reason) || reason == ChangeReason::kHung; }

namespace {

// Removal reasons in order of urgency: the first one present names the change.
constexpr ChangeReason kRemovalPriority[] = {ChangeReason::kNodeLost,     ChangeReason::kPeerUnreachable,
                                             ChangeReason::kWorkerFailed, ChangeReason::kWorkerRemoved,
                                             ChangeReason::kDisrupted,    ChangeReason::kScaledDown};

ChangeReason RemovalReason(const WorkerObservation* w) {
  if (w == nullptr) return ChangeReason::kWorkerRemoved;  // the pod is gone
  if (w->node_lost) return ChangeReason::kNodeLost;
  if (w->unreachable) return ChangeReason::kPeerUnreachable;
  if (w->failed) return ChangeReason::kWorkerFailed;
  if (w->disrupted) return ChangeReason::kDisrupted;
  if (w->beyond_desired) return ChangeReason::kScaledDown;
  return ChangeReason::kWorkerRemoved;  // no longer Ready, or being deleted
}

bool Eligible(const WorkerObservation& w) {
  return (w.ready || w.finishing) && !w.failed && !w.node_lost && !w.beyond_desired && !w.unreachable && !w.disrupted;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "1 pod", "2 pods".
std::string Counted(int64_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

// What one DecideMembership call has observed and decided so far; each step reads it and adds to it. Not
// copyable (it holds references); lives on DecideMembership's stack.
struct Deciding {
  Deciding(const api::Membership& current_record, const std::vector<WorkerObservation>& observed,
           const MembershipPolicy& membership_policy, Clock::time_point time)
      : current(current_record),
        workers(observed),
        policy(membership_policy),
        now(time),
        processes(std::max<int32_t>(1, policy.processes_per_pod)),
        multiple(std::max<int32_t>(1, policy.multiple_of)),
        group(multiple / std::gcd(multiple, processes)),
        started(current.world_size() > 0) {}

  // Observations.
  const api::Membership& current;
  const std::vector<WorkerObservation>& workers;
  const MembershipPolicy& policy;
  const Clock::time_point now;
  const int32_t processes;  // ranks per pod (a pod joins, survives and leaves with all of them)
  const int32_t multiple;   // every world is a multiple of this many ranks
  const int32_t group;      // the pods that fill one such multiple: multiple / gcd(multiple, processes)
  // The current world is not empty. A job whose world emptied (suspended, or every worker lost) starts
  // again under the gang rule.
  const bool started;

  // Decisions.
  std::vector<api::Member> survivors;                        // every surviving rank, in rank order
  std::vector<std::string> survivor_pods;                    // their pods, in rank order
  std::map<ChangeReason, std::vector<std::string>> removed;  // members' pods that leave, by why
  std::vector<const WorkerObservation*> joiners;             // eligible workers not in the record, by worker index
  bool someone_still_starting = false;  // a worker that may still become Ready is neither member nor joiner
  bool admit_joiners = false;           // joiners join now, room permitting (their batch window is over)
  std::vector<std::string> hung;        // surviving members that reported the generation hung, as "pod (N s)"
  size_t admitted = 0;                  // how many joiners (the first ones) join
  MembershipDecision decision;
};

// Survivors and removals: which members stay (their order kept, address as now) and why each other leaves.
void FindSurvivors(Deciding& d) {
  std::map<std::string, const WorkerObservation*> by_pod;
  for (const auto& w : d.workers) by_pod[w.pod] = &w;
  for (const auto& m : d.current.members) {  // a pod is the unit: all its ranks stay or all leave
    auto it = by_pod.find(m.pod);
    const WorkerObservation* w = it == by_pod.end() ? nullptr : it->second;
    if (w != nullptr && w->uid != m.uid) w = nullptr;  // same name, new pod: the old worker is gone
    if (w != nullptr && Eligible(*w)) {
      api::Member kept = m;
      kept.address = w->address;
      kept.node = w->node;
      d.survivors.push_back(kept);
      if (std::find(d.survivor_pods.begin(), d.survivor_pods.end(), m.pod) == d.survivor_pods.end()) {
        d.survivor_pods.push_back(m.pod);
        if (w->hung_seconds > 0 && d.started)
          d.hung.push_back(m.pod + " (no step for " + std::to_string(std::lround(w->hung_seconds)) + " s)");
      }
    } else {
      std::vector<std::string>& names = d.removed[RemovalReason(w)];
      if (std::find(names.begin(), names.end(), m.pod) == names.end()) names.push_back(m.pod);
    }
  }
}

// Joiners: the eligible workers not in the record, in worker-index order; and whether another may come.
void FindJoiners(Deciding& d) {
  for (const auto& w : d.workers) {
    bool member = false;
    for (const auto& s : d.survivors) member |= (s.pod == w.pod && s.uid == w.uid);
    if (member) continue;
    if (Eligible(w))
      d.joiners.push_back(&w);
    else if (!w.failed && !w.node_lost && !w.beyond_desired && !w.unreachable && !w.disrupted && !w.ready)
      d.someone_still_starting = true;
  }
  std::sort(d.joiners.begin(), d.joiners.end(), [](auto* a, auto* b) { return a->index < b->index; });
  d.admit_joiners = !d.joiners.empty();
}

// The gang rule: whether a job with an empty world must wait, having fewer than min_workers Ready.
bool GangWaits(Deciding& d) {
  const int32_t ready_total = static_cast<int32_t>(d.survivor_pods.size() + d.joiners.size());
  if (d.started || ready_total >= d.policy.min_workers) return false;
  d.decision.waiting_for = "waiting for " + std::to_string(d.policy.min_workers) +
                           " Ready workers to start (gang minimum); " + std::to_string(ready_total) + " Ready";
  return true;
}

// Warm spares: joiners beyond the world's cap (policy.max_pods) stay out, the last by worker index first.
void KeepSpares(Deciding& d) {
  if (d.policy.max_pods <= 0) return;
  const size_t room =
      static_cast<size_t>(std::max<int64_t>(0, d.policy.max_pods - static_cast<int64_t>(d.survivor_pods.size())));
  if (d.joiners.size() <= room) return;
  const int32_t standby = static_cast<int32_t>(d.joiners.size() - room);
  d.joiners.resize(room);
  d.admit_joiners = !d.joiners.empty();
  d.decision.spares += standby;
  d.decision.spares_waiting = Counted(standby, "Ready worker") + " waiting as " +
                              (standby == 1 ? "a spare" : "spares") + " (spec.replicas.spares)";
}

// Join batching: whether the joiners wait, and until when, for the batch window to pass.
void BatchJoins(Deciding& d) {
  // No wait when members leave now or nobody else is coming. Else the window counts from when the earliest
  // joiner became Ready (for the first generation: from when the gang minimum was reached).
  if (!d.admit_joiners || !d.removed.empty() || !d.hung.empty() || !d.someone_still_starting) return;
  std::vector<Clock::time_point> since;
  for (auto* j : d.joiners) since.push_back(j->ready_since);
  std::sort(since.begin(), since.end());
  const int32_t to_gang = d.policy.min_workers - 1 - static_cast<int32_t>(d.survivor_pods.size());
  size_t pivot = d.started ? 0 : static_cast<size_t>(std::max<int32_t>(0, to_gang));
  pivot = std::min(pivot, since.size() - 1);
  const Clock::time_point due = since[pivot] + d.policy.join_batch_window;
  if (d.now >= due) return;
  d.admit_joiners = false;
  d.decision.recheck_at = due;
  if (!d.started)
    d.decision.waiting_for = "gang minimum reached; starting when the join window ends or every worker is Ready";
}

// Whole groups: the world, the survivors that leave to keep it whole, the joiners admitted and the spares.
void KeepWholeGroups(Deciding& d) {
  // The world is the largest multiple of the group that survivors and admitted joiners fill. Survivors
  // beyond it (a loss left a partial group) leave, the highest ranks first, so the others keep their
  // ranks; joiners beyond it wait as spares.
  const size_t offered_joiners = d.admit_joiners ? d.joiners.size() : 0;
  const int32_t offered = static_cast<int32_t>(d.survivor_pods.size() + offered_joiners);
  const int32_t world = offered / d.group * d.group;
  while (static_cast<int32_t>(d.survivor_pods.size()) > world) {
    const std::string pod = d.survivor_pods.back();
    d.survivor_pods.pop_back();
    std::erase_if(d.survivors, [&pod](const api::Member& m) { return m.pod == pod; });
    d.decision.dropped.insert(d.decision.dropped.begin(), pod);
  }
  d.admitted = d.admit_joiners ? static_cast<size_t>(world) - d.survivor_pods.size() : 0;
  if (d.admitted >= offered_joiners) return;
  const int32_t spares = static_cast<int32_t>(d.joiners.size() - d.admitted);
  const int32_t more = d.group - (offered - world);
  d.decision.spares += spares;
  d.decision.spares_waiting = (d.decision.spares_waiting.empty() ? "" : d.decision.spares_waiting + "; ") +
                              Counted(spares, "Ready worker") + " waiting for " + Counted(more, "more worker") +
                              " to complete a group of " + std::to_string(d.group) + " (spec.replicas.multipleOf)";
}

// Whether a new generation is due: a member leaves, a joiner joins, or a member reported the generation hung.
bool Changed(const Deciding& d) {
  return !d.removed.empty() || !d.decision.dropped.empty() || d.admitted > 0 || !d.hung.empty();
}

// The next record: the survivors in their order, then each admitted pod as `processes` consecutive ranks.
api::Membership NextRecord(const Deciding& d) {
  std::vector<api::Member> joining;
  for (size_t i = 0; i < d.admitted; ++i) {
    const WorkerObservation& j = *d.joiners[i];
    for (int32_t process = 0; process < d.processes; ++process) {
      api::Member m{j.pod, j.uid, 0, j.address, j.node};
      m.process = process;
      joining.push_back(std::move(m));
    }
  }
  auto survive = [&d](const api::Member& m) -> std::optional<api::Member> {
    for (const auto& s : d.survivors)
      if (s.pod == m.pod && s.process == m.process) return s;
    return std::nullopt;
  };
  const int32_t port = d.policy.coordinator_port;
  return api::NextMembership(d.current, survive, std::move(joining),
                             [port](const api::Member& rank0) { return api::CoordinatorAddress(rank0, port); });
}

// The change's reason: the most urgent removal, else a drop to whole groups, else why the joiners came.
ChangeReason NameReason(const Deciding& d) {
  for (ChangeReason r : kRemovalPriority) {
    if (d.removed.count(r)) return r;
  }
  if (!d.decision.dropped.empty()) return ChangeReason::kScaledDown;  // a world not in whole groups
  if (!d.started) return ChangeReason::kJobStarted;
  if (!d.hung.empty()) return ChangeReason::kHung;
  bool scale_up = false;
  for (size_t i = 0; i < d.admitted; ++i) scale_up |= d.joiners[i]->for_scale_up;
  return scale_up ? ChangeReason::kScaledUp : ChangeReason::kWorkerJoined;
}

// The change's message: generation and world, then who left (by reason), left for whole groups, joined.
std::string DescribeChange(const Deciding& d, const api::Membership& next) {
  std::vector<std::string> parts;
  for (ChangeReason r : kRemovalPriority) {
    if (auto it = d.removed.find(r); it != d.removed.end())
      parts.push_back(ReasonName(r) + ": " + JoinNames(it->second));
  }
  if (!d.decision.dropped.empty()) {
    parts.push_back("left to keep whole groups of " + std::to_string(d.group) + ": " + JoinNames(d.decision.dropped));
  }
  if (!d.hung.empty()) parts.push_back(ReasonName(ChangeReason::kHung) + ": " + JoinNames(d.hung));
  std::vector<std::string> joined;
  for (size_t i = 0; i < d.admitted; ++i) joined.push_back(d.joiners[i]->pod);
  if (!joined.empty()) parts.push_back("joined: " + JoinNames(joined));
  const std::string pods = d.processes > 1 ? " in " + Counted(next.pod_count(), "pod") : "";
  return "generation " + std::to_string(next.generation) + ", world size " + std::to_string(next.world_size()) + pods +
         " (" + JoinNames(parts) + ")";
}

// The new generation, named and described; a world that whole groups emptied waits for the gang again.
void Publish(Deciding& d) {
  api::Membership next = NextRecord(d);
  const ChangeReason reason = NameReason(d);
  next.reason = ReasonName(reason);
  next.message = DescribeChange(d, next);
  next.changed_at = FormatRfc3339(d.now);
  if (next.world_size() == 0 && !d.decision.dropped.empty()) {
    d.decision.waiting_for = "fewer Ready workers than one group of " + std::to_string(d.group) +
                             " (spec.replicas.multipleOf); waiting for " + std::to_string(d.policy.min_workers) +
                             " Ready workers to start again (gang minimum)";
  }
  d.decision.reason = reason;
  d.decision.next = std::move(next);
}

}  // namespace

// Survivors and removals, joiners, the gang rule, join batching, whole groups; then, when anything
// changed, the next record with its reason and message.
MembershipDecision DecideMembership(const api::Membership& current, const std::vector<WorkerObservation>& workers,
                                    const MembershipPolicy& policy, Clock::time_point now) {
  Deciding d(current, workers, policy, now);
  FindSurvivors(d);
  FindJoiners(d);
  if (GangWaits(d)) return std::move(d.decision);
  KeepSpares(d);
  BatchJoins(d);
  KeepWholeGroups(d);
  if (Changed(d)) Publish(d);
  return std::move(d.decision);
}

}  // namespace ringmaster::controller
