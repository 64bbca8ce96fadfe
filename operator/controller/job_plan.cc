#include "operator/controller/job_plan.h"

#include <algorithm>
#include <set>

#include "api/job_status.h"
#include "api/names.h"
#include "api/training_job.h"
#include "api/worker_termination.h"
#include "base/json_path.h"
#include "base/time_format.h"
#include "operator/controller/goodput.h"
#include "operator/controller/membership.h"
#include "operator/controller/peer_verdict.h"
#include "operator/controller/worker_objects.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

constexpr size_t kRecentFailuresKept = kMaxKeptFailedPods;
// Failures older than this no longer lengthen the replacement backoff (a kubelet resets a container's
// crash back-off after 10 minutes of running): a long job that lost a worker now and then is not held
// at the 60 s cap for good.
constexpr std::chrono::minutes kBackoffMemory{10};
// A failure after a run this short looks like a crash loop (a bad image, a script that dies at import, a worker
// that fails its first steps): only such failures lengthen the replacement backoff, so that kills of workers
// that trained for minutes (preemption without notice, an OOM kill at a peak, a chaos test) do not hold back
// the replacements of later ones.
constexpr std::chrono::seconds kCrashLoopRun{60};
// A member that exits 0 has most likely finished the training with its peers, and rank 0's exit (which
// completes the job) is moments away: it stays a member, and is not replaced, for this long. Likewise
// workers still running when rank 0's exit completed the job get this long to exit before cleanup.
constexpr std::chrono::seconds kFinishGrace{10};
// A member whose readiness probe started failing while its container still runs stays a member this
// long. A worker that finished the training stops serving /readyz when its session ends, and its
// process may take seconds more to exit (a PyTorch interpreter's teardown on a busy node): dropping it
// at once would publish a generation without the workers that just completed the job, and their
// exits (0, no longer members) would then read as departures, not as the job's end. A worker that is
// really gone is still dropped: its exit, its node's loss or its deletion act at once, and a hung one
// after this grace (short beside a kubelet's own 30 s of failed probes before NotReady). 5 s was too
// short: on a loaded 2-core machine two finished PyTorch workers took 5.1 and 6.2 s from their last
// /readyz answer to their exit, and the job trained again instead of completing.
constexpr std::chrono::seconds kReadinessLossGrace{15};

// What the plan needs to know about one worker pod.
struct PodView {
  std::string name, uid, node, ip, phase;
  int32_t index = -1;
  bool ready = false;
  bool deleting = false;
  bool deleted_without_grace = false;  // deleting with deletionGracePeriodSeconds 0: killed, not leaving
  Clock::time_point deleting_since{};
  Clock::time_point ready_since{};
  std::optional<Clock::time_point> not_ready_since;  // its Ready condition is False since then
  int exit_code = 0;
  std::string exit_reason;
  Clock::time_point finished_at{};  // when its container terminated (valid when phase is Succeeded/Failed)
  int64_t ran_seconds = -1;         // how long the terminated container ran; -1 unknown
  // What its terminated container left in its termination message (api/worker_termination.h: a worker that
  // cannot go on names its node, GPU and error there), or the kubelet's log tail (FallbackToLogsOnError).
  std::string termination_message;
  // A container that will not start until someone acts (api::container_waiting::kStuck), and the kubelet's words.
  std::string stuck_reason, stuck_message;
  std::string unschedulable;  // the scheduler's message while it cannot place the pod (PodScheduled=False)
  bool for_scale_up = false;
  // The reason of its DisruptionTarget condition when True (the control plane is about to delete it).
  std::string disruption_target;
  // Why it is about to be taken while it runs (DisruptionOf), as a phrase; empty when it is not.
  std::string disruption;
};

bool IsStuck(const std::string& waiting_reason) {
  for (std::string_view r : api::container_waiting::kStuck)
    if (waiting_reason == r) return true;
  return false;
}

Clock::time_point TimeOr(const std::string& s, Clock::time_point fallback) {
  return ParseRfc3339(s).value_or(fallback);
}

PodView ViewPod(const json& pod, Clock::time_point now) {
  PodView v;
  const json& meta = At(pod, {"metadata"});
  const json& spec = At(pod, {"spec"});
  const json& status = At(pod, {"status"});
  v.name = StringAt(meta, {"name"});
  v.uid = StringAt(meta, {"uid"});
  v.index = WorkerIndexOf(pod).value_or(-1);
  v.node = StringAt(spec, {"nodeName"});
  v.ip = StringAt(status, {"podIP"});
  v.phase = StringAt(status, {"phase"});
  v.for_scale_up = StringAt(meta, {"annotations", api::kCreatedForAnnotation}) == api::created_for::kScaleUp;
  if (meta.contains("deletionTimestamp")) {
    // The apiserver sets deletionTimestamp to the end of the pod's grace period, not to the request's time:
    // the deletion began deletionGracePeriodSeconds before it (forceDeleteGraceSeconds counts from there).
    v.deleting = true;
    const json& grace = At(meta, {"deletionGracePeriodSeconds"});
    v.deleted_without_grace = grace.is_number_integer() && grace.get<int64_t>() == 0;
    v.deleting_since = TimeOr(StringAt(meta, {"deletionTimestamp"}), now) -
                       std::chrono::seconds(IntAt(meta, {"deletionGracePeriodSeconds"}));
  }
  for (const auto& c : ArrayAt(status, {"conditions"})) {
    if (StringAt(c, {"type"}) == api::kDisruptionTargetCondition &&
        StringAt(c, {"status"}) == api::condition_status::kTrue) {
      v.disruption_target = StringAt(c, {"reason"});
      if (v.disruption_target.empty()) v.disruption_target = "no reason given";
    }
    // The scheduler cannot place it (no node has the GPUs, a taint, an affinity): the message says why.
    if (StringAt(c, {"type"}) == api::kPodScheduledCondition &&
        StringAt(c, {"status"}) == api::condition_status::kFalse &&
        StringAt(c, {"reason"}) == api::kUnschedulableReason) {
      v.unschedulable = StringAt(c, {"message"});
      if (v.unschedulable.empty()) v.unschedulable = "no message from the scheduler";
    }
    if (StringAt(c, {"type"}) != api::kReadyCondition) continue;
    const std::string ready = StringAt(c, {"status"});
    if (ready == api::condition_status::kTrue) {
      v.ready = v.phase == api::pod_phase::kRunning && !v.deleting;
      v.ready_since = TimeOr(StringAt(c, {"lastTransitionTime"}), now);
    }
    if (ready == api::condition_status::kFalse) {
      v.not_ready_since = TimeOr(StringAt(c, {"lastTransitionTime"}), now);
    }
  }
  for (const auto& cs : ArrayAt(status, {"containerStatuses"})) {
    if (const json& w = At(cs, {"state", "waiting"}); w.is_object() && v.stuck_reason.empty()) {
      if (std::string reason = StringAt(w, {"reason"}); IsStuck(reason)) {
        v.stuck_reason = reason;
        v.stuck_message = StringAt(w, {"message"});
      }
    }
    if (const json& t = At(cs, {"state", "terminated"}); t.is_object()) {
      const int exit_code = static_cast<int>(IntAt(t, {"exitCode"}));
      if (exit_code != 0 || v.exit_reason.empty()) {
        v.exit_code = exit_code;
        v.exit_reason = StringAt(t, {"reason"});
        v.termination_message = StringAt(t, {"message"});
        v.finished_at = TimeOr(StringAt(t, {"finishedAt"}), now);
        const auto started = ParseRfc3339(StringAt(t, {"startedAt"}));
        const auto finished = ParseRfc3339(StringAt(t, {"finishedAt"}));
        v.ran_seconds = started && finished && *finished >= *started
                            ? std::chrono::duration_cast<std::chrono::seconds>(*finished - *started).count()
                            : -1;
      }
    }
  }
  return v;
}

// Why `p` is about to be taken while it runs, as a phrase; empty when it is not. The control plane marks a pod
// it will delete for a disruption (DisruptionTarget); any deletion under way (a drain, kubectl delete) sends
// its container SIGTERM and a grace period; a disruption taint on its node announces the node's loss.
std::string DisruptionOf(const PodView& p, const std::map<std::string, NodeState>& nodes) {
  if (!p.disruption_target.empty()) return "DisruptionTarget: " + p.disruption_target;
  // A deletion with no grace (kubectl delete --force --grace-period=0, kubectl ringmaster kill) kills the container
  // at once: a loss, not a departure it could take at a step boundary.
  if (p.deleting && !p.deleted_without_grace) return "its pod is being deleted";
  if (auto node = nodes.find(p.node); node != nodes.end() && !node->second.disruption_taint.empty())
    return "its node " + p.node + " has the disruption taint " + node->second.disruption_taint;
  return "";
}

// Sets condition `type` in `conditions`. lastTransitionTime moves when the status flips, or on every
// call when `touch` (the membership condition records each change).
void SetCondition(std::vector<api::Condition>& conditions, std::string_view type, std::string_view status,
                  std::string_view reason, const std::string& message, const std::string& now,
                  int64_t observed_generation, bool touch) {
  for (auto& c : conditions) {
    if (c.type != type) continue;
    bool flipped = c.status != status;
    bool changed = flipped || c.reason != reason || c.message != message;
    c.status = status;
    c.reason = reason;
    c.message = message;
    c.observed_generation = observed_generation;
    if (flipped || (touch && changed)) c.last_transition_time = now;
    return;
  }
  conditions.push_back(
      {std::string(type), std::string(status), std::string(reason), message, now, observed_generation});
}

void EarliestRequeue(JobPlan& plan, Clock::time_point at) {
  if (!plan.requeue_at || at < *plan.requeue_at) plan.requeue_at = at;
}

bool Finished(const std::string& phase) { return phase == api::phase::kSucceeded || phase == api::phase::kFailed; }

// What one PlanJob call has observed and decided so far; each step reads it and adds to it. The
// observations (input, spec, current status, pods) never change after construction, so `pods` may be
// pointed into. Not copyable (it holds references); lives on PlanJob's stack.
struct Planning {
  // Observe: the job's current status carried over as the starting point, and its pods viewed.
  Planning(const PlanInput& input, const api::TrainingJob& job, const JobSpec& job_spec, int32_t requested)
      : in(input),
        spec(job_spec),
        requested_desired(requested),
        current(job.status),
        generation(job.metadata.generation),
        now_s(FormatRfc3339(input.now)),
        status(job.status),
        phase(job.status.phase),
        membership(job.status.membership.value_or(api::Membership{})) {
    for (const auto& l : current.leaving) leaving[l.pod] = {l.uid, TimeOr(l.since, in.now)};
    status.selector = WorkerSelector(job.metadata.name);
    status.observed_generation = generation;
    for (const auto& p : in.pods) {
      pods.push_back(ViewPod(p, in.now));
      pods.back().disruption = DisruptionOf(pods.back(), in.nodes);
    }
    std::sort(pods.begin(), pods.end(), [](const PodView& a, const PodView& b) { return a.index < b.index; });
  }

  // Observations.
  const PlanInput& in;
  const JobSpec& spec;              // as in effect: a queued job's is capped at its admission
  const int32_t requested_desired;  // spec.replicas.desired as the user asked (status.replicas.desired)
  const api::TrainingJobStatus& current;
  const int64_t generation;
  const std::string now_s;
  std::vector<PodView> pods;  // sorted by worker index

  // Decisions.
  api::TrainingJobStatus status;
  // An api::phase, "" until one is decided (written as Pending); status.phase is set from it at the end.
  std::string phase;
  api::Membership membership;        // generation 0 until one is published (status.membership stays unset then)
  Clock::time_point last_failure{};  // the newest counted failure (set by PlanExitedWorkers)
  // A Hung generation published now: its reporters and when each one's stall began (set by PublishMembership).
  std::vector<FailureTime> stalls;
  int32_t spares = 0;  // Ready workers kept out of the membership (set by PlanWorkers)
  // Workers dropped from membership by a scale-down that have not exited yet: pod name -> {uid, since}.
  std::map<std::string, std::pair<std::string, Clock::time_point>> leaving;
  JobPlan plan;
};

bool IsLeaving(const Planning& st, const std::string& pod, const std::string& uid) {
  auto it = st.leaving.find(pod);
  return it != st.leaving.end() && it->second.first == uid;
}

// Sets the job's condition `type` (see SetCondition), as of now and the job's generation.
void SetJobCondition(Planning& st, std::string_view type, std::string_view status, std::string_view reason,
                     const std::string& message, bool touch = false) {
  SetCondition(st.status.conditions, type, status, reason, message, st.now_s, st.generation, touch);
}

// Records an Event on the job (`type` is an api::event_type).
void AddEvent(Planning& st, std::string_view type, std::string_view reason, std::string message) {
  st.plan.events.push_back({std::string(type), std::string(reason), std::move(message)});
}

// Neither finished nor suspended: membership and workers are still managed.
bool Active(const Planning& st) { return !Finished(st.phase) && st.phase != api::phase::kSuspended; }

// Plans the deletion of `p`, unless it is already being deleted and this is not a forced delete.
void DeletePod(Planning& st, const PodView& p, const std::string& why, bool force = false) {
  if (p.deleting && !force) return;
  st.plan.deletes.push_back(PodDeletion{p.name, p.uid, force, why});
}

// Ends the job in `final_phase` (api::phase::kSucceeded or kFailed), with that condition and an event.
void Finish(Planning& st, std::string_view final_phase, std::string_view reason, const std::string& message) {
  const bool failed = final_phase == api::phase::kFailed;
  st.phase = final_phase;
  st.status.completion_time = st.now_s;
  SetJobCondition(st, failed ? api::condition::kFailed : api::condition::kSucceeded, api::condition_status::kTrue,
                  reason, message);
  SetJobCondition(st, api::condition::kRunning, api::condition_status::kFalse, reason, message);
  AddEvent(st, failed ? api::event_type::kWarning : api::event_type::kNormal, reason, message);
}

// A member that exited 0 less than kFinishGrace ago: most likely done with its peers, so kept as is.
bool Finishing(const Planning& st, const PodView& p) {
  const api::Member* m = st.membership.Find(p.name);
  return p.phase == api::pod_phase::kSucceeded && m != nullptr && m->uid == p.uid &&
         st.in.now < p.finished_at + kFinishGrace;
}

// A member whose readiness was lost less than kReadinessLossGrace ago while its container runs on:
// still counted as Ready (the plan is looked at again when the grace ends).
bool ReadinessLossGraced(Planning& st, const PodView& p) {
  const api::Member* m = st.membership.Find(p.name);
  if (p.ready || !p.not_ready_since || m == nullptr || m->uid != p.uid || p.phase != api::pod_phase::kRunning ||
      p.deleting) {
    return false;
  }
  const Clock::time_point until = *p.not_ready_since + kReadinessLossGrace;
  if (st.in.now >= until) return false;
  EarliestRequeue(st.plan, until);
  return true;
}

// Finished: deletes the pods spec.runPolicy.cleanPodPolicy names and, with a TTL, the job itself.
void PlanFinishedJob(Planning& st) {
  // Workers still running when the job succeeded are most likely finishing too (rank 0 was just the
  // first to exit): they get kFinishGrace to exit by themselves before their pods are deleted.
  const Clock::time_point done = TimeOr(st.current.completion_time, st.in.now);
  const bool settling = st.phase == api::phase::kSucceeded && st.in.now < done + kFinishGrace;
  const CleanPodPolicy policy = st.spec.clean_pod_policy;
  for (const auto& p : st.pods) {
    bool running = p.phase == api::pod_phase::kRunning || p.phase == api::pod_phase::kPending || p.phase.empty();
    if (policy == CleanPodPolicy::kAll || (policy == CleanPodPolicy::kRunning && running)) {
      if (running && settling) {
        EarliestRequeue(st.plan, done + kFinishGrace);
        continue;
      }
      DeletePod(st, p, "the job has finished");
    }
  }
  if (st.spec.ttl_after_finished) {
    if (st.in.now >= done + *st.spec.ttl_after_finished)
      st.plan.delete_job = true;
    else
      EarliestRequeue(st.plan, done + *st.spec.ttl_after_finished);
  }
}

// Suspended: no workers and an empty membership; status (restart count, membership history) is kept. `reason`
// and `why` are the Suspended condition's (spec.runPolicy.suspend, or the queue's); an Event says so when the
// job becomes suspended or the reason changes. The members leave at a step boundary after a final commit (the
// runtime takes the empty generation as an orderly change), so a resumed job loses no step.
void PlanSuspension(Planning& st, std::string_view reason, const std::string& why) {
  for (const auto& p : st.pods) DeletePod(st, p, "the job is suspended: " + why);
  std::string current_reason;
  for (const auto& c : st.current.conditions)
    if (c.type == api::condition::kSuspended && c.status == api::condition_status::kTrue) current_reason = c.reason;
  if (st.phase != api::phase::kSuspended || current_reason != reason) {
    AddEvent(st, api::event_type::kNormal, reason,
             "the job is suspended (" + why + ")" +
                 (st.membership.world_size() > 0 ? "; its workers commit at their next step and leave" : ""));
  }
  st.phase = api::phase::kSuspended;
  SetJobCondition(st, api::condition::kSuspended, api::condition_status::kTrue, reason, why);
  SetJobCondition(st, api::condition::kRunning, api::condition_status::kFalse, api::reason::kSuspended,
                  "the job is suspended");
  if (st.membership.world_size() > 0) {
    api::Membership empty;
    empty.generation = st.membership.generation + 1;
    empty.reason = api::reason::kSuspended;
    empty.message =
        "generation " + std::to_string(empty.generation) + ", world size 0 (the job is suspended: " + why + ")";
    empty.changed_at = st.now_s;
    st.membership = empty;
  }
}

// A queued job that Kueue has not admitted (or has evicted) is suspended with Kueue's words.
void PlanQueued(Planning& st, const QueueAdmission& q) {
  if (!q.kueue_served) {
    PlanSuspension(st, api::reason::kQueued,
                   "it is labelled " + std::string(kQueueNameLabel) +
                       " but this cluster does not serve Kueue's Workload API (kueue.x-k8s.io/v1beta2): install Kueue "
                       "v0.15 or later and restart the operator, or remove the label");
  } else if (q.evicted) {
    PlanSuspension(st, api::reason::kEvicted, "Kueue evicted its Workload: " + q.reason + ": " + q.message);
  } else {
    PlanSuspension(st, api::reason::kQueued,
                   "waiting for Kueue to admit it in LocalQueue " + q.queue + ": " +
                       (q.reason.empty() ? "" : q.reason + ": ") + q.message);
  }
}

// Not suspended: a job that was suspended resumes (Pending); one past its active deadline fails.
void PlanResumeAndDeadline(Planning& st) {
  if (st.phase == api::phase::kSuspended) {
    const bool queued = st.in.queue.has_value();
    AddEvent(st, api::event_type::kNormal, queued ? api::reason::kAdmitted : api::reason::kResumed,
             queued ? "Kueue " + st.in.queue->message + "; its workers are created"
                    : "the job is resumed; its workers are recreated");
    SetJobCondition(st, api::condition::kSuspended, api::condition_status::kFalse,
                    queued ? api::reason::kAdmitted : api::reason::kResumed,
                    queued ? "Kueue " + st.in.queue->message : "spec.runPolicy.suspend is false");
    st.phase = api::phase::kPending;
    st.status.start_time = st.now_s;  // as a Kubernetes Job's: the deadline counts from the resumption
  }
  // The job starts when it is first active (not suspended, not waiting in a queue), as a Kubernetes Job does:
  // the deadline counts from then, so a job whose workers never become Ready does not wait forever.
  if (st.status.start_time.empty()) st.status.start_time = st.now_s;
  if (st.spec.active_deadline) {
    Clock::time_point started = TimeOr(st.status.start_time, st.in.now);
    if (st.in.now >= started + *st.spec.active_deadline) {
      Finish(st, api::phase::kFailed, api::reason::kDeadlineExceeded,
             "the job ran longer than spec.runPolicy.activeDeadlineSeconds (" +
                 std::to_string(st.spec.active_deadline->count()) + " s)");
    } else {
      EarliestRequeue(st.plan, started + *st.spec.active_deadline);
    }
  }
}

// Since when the job has had fewer members than spec.replicas.min: its Running condition is False since then
// (or since it was resumed, if later); nullopt while it has enough, or before its first reconcile.
std::optional<Clock::time_point> BelowMinimumSince(const Planning& st) {
  std::optional<Clock::time_point> since, resumed;
  for (const auto& c : st.status.conditions) {
    if (c.type == api::condition::kRunning) {
      if (c.status != api::condition_status::kFalse) return std::nullopt;
      since = ParseRfc3339(c.last_transition_time);
    } else if (c.type == api::condition::kSuspended && c.status == api::condition_status::kFalse) {
      resumed = ParseRfc3339(c.last_transition_time);
    }
  }
  if (since && resumed && *resumed > *since) since = resumed;
  return since;
}

// A job below spec.replicas.min for spec.scheduling.scheduleTimeoutSeconds fails: the GPUs its started workers
// hold (an image that cannot be pulled, a gang that cannot be completed) go back to the cluster when its pods
// are deleted (spec.runPolicy.cleanPodPolicy). The message carries why it waited (the Running condition's).
void PlanScheduleTimeout(Planning& st) {
  if (!st.spec.schedule_timeout) return;
  const std::optional<Clock::time_point> since = BelowMinimumSince(st);
  if (!since) return;
  const Clock::time_point deadline = *since + *st.spec.schedule_timeout;
  if (st.in.now < deadline) {
    EarliestRequeue(st.plan, deadline);
    return;
  }
  std::string why;
  for (const auto& c : st.status.conditions)
    if (c.type == api::condition::kRunning) why = c.message;
  Finish(st, api::phase::kFailed, api::reason::kScheduleTimeout,
         "fewer Ready workers than spec.replicas.min (" + std::to_string(st.spec.min_workers) +
             ") for spec.scheduling.scheduleTimeoutSeconds (" + std::to_string(st.spec.schedule_timeout->count()) +
             " s)" + (why.empty() ? "" : ": " + why));
}

// Completion: the job succeeds when the worker holding rank 0 in the current membership exited 0.
void DecideCompletion(Planning& st) {
  const api::Member* rank0 = st.membership.members.empty() ? nullptr : &st.membership.members[0];
  for (const auto& p : st.pods) {
    if (rank0 && p.phase == api::pod_phase::kSucceeded && p.name == rank0->pod && p.uid == rank0->uid) {
      Finish(st, api::phase::kSucceeded, api::reason::kCompleted, "rank 0 (" + p.name + ") exited 0");
    }
  }
}

// Exited workers: each failure is counted once (recentFailures remembers its uid); past maxRestarts the job fails.
// A failed worker's pod is kept (the newest spec.runPolicy.keepFailedPods of them) so that `kubectl logs` can
// read what it printed; its index stays taken, so its replacement gets a new name. Older failed pods, a disrupted
// worker that stopped, and a worker that exited 0 after it left membership are deleted.
void PlanExitedWorkers(Planning& st) {
  std::set<std::string> counted;
  for (const auto& f : st.status.recent_failures) counted.insert(f.uid);
  for (const auto& f : st.status.recent_failures)
    st.last_failure = std::max(st.last_failure, TimeOr(f.time, Clock::time_point{}));
  std::vector<const PodView*> failed_pods;  // counted failures: kept or deleted below
  for (const auto& p : st.pods) {
    if (Finishing(st, p)) {
      EarliestRequeue(st.plan, p.finished_at + kFinishGrace);
      continue;
    }
    const bool failed = p.phase == api::pod_phase::kFailed;
    const bool succeeded = p.phase == api::pod_phase::kSucceeded;
    bool exited = failed || (succeeded && !(st.membership.Find(p.name) == nullptr));
    if (succeeded && st.membership.Find(p.name) == nullptr) {
      DeletePod(st, p, "the worker left after it was removed from membership");
      continue;
    }
    if (!exited) continue;
    // A disrupted worker that stopped (its grace ran out, or it had none) was taken, not broken: its exit is not
    // a failure and does not count against spec.elasticPolicy.maxRestarts.
    if (failed && p.disruption.empty()) {
      if (!counted.count(p.uid)) {
        ++st.status.restart_count;
        st.last_failure = st.in.now;
        // Where it failed and what it said, when it said anything (a worker no rebuild could repair).
        const api::WorkerTermination said = api::ParseTerminationMessage(p.termination_message);
        std::string message = "worker " + p.name + " failed (exit code " + std::to_string(p.exit_code) +
                              (p.exit_reason.empty() ? "" : ", " + p.exit_reason) + ")";
        if (!said.error.empty())  // its first line: a log tail (FallbackToLogsOnError) may have many
          message += ": " + api::TruncateUtf8(said.error.substr(0, said.error.find('\n')), 256);
        if (st.spec.keep_failed_pods > 0)
          message += "; its pod is kept for its logs: kubectl logs -n " +
                     StringAt(st.in.job, {"metadata", "namespace"}) + " " + p.name;
        // To the millisecond: the replacement backoff counts from this time, and whole seconds could cut
        // a 1 s backoff to nothing (the replacement then races the failed pod's deletion for its index).
        st.status.recent_failures.push_back({p.name, p.uid, p.exit_code, p.exit_reason,
                                             FormatRfc3339(st.in.now, TimePrecision::kMillis), p.ran_seconds,
                                             p.node.empty() ? said.node : p.node, said.gpu,
                                             api::TruncateUtf8(p.termination_message, api::kFailureMessageKept)});
        AddEvent(st, api::event_type::kWarning, ReasonName(ChangeReason::kWorkerFailed), message);
      }
      failed_pods.push_back(&p);
      continue;
    }
    DeletePod(st, p,
              !p.disruption.empty() ? "the worker stopped after its disruption (" + p.disruption + ")"
              : failed              ? "the worker failed"
                                    : "the worker exited while still a member");
  }
  while (st.status.recent_failures.size() > kRecentFailuresKept)
    st.status.recent_failures.erase(st.status.recent_failures.begin());
  // The newest failures' pods stay (keepFailedPods <= kRecentFailuresKept: a kept pod's uid is always in
  // recentFailures, so its failure is never counted again).
  std::set<std::string> kept;
  for (auto f = st.status.recent_failures.rbegin();
       f != st.status.recent_failures.rend() && kept.size() < static_cast<size_t>(st.spec.keep_failed_pods); ++f)
    kept.insert(f->uid);
  for (const PodView* p : failed_pods) {
    if (kept.count(p->uid)) continue;
    DeletePod(st, *p,
              st.spec.keep_failed_pods > 0 ? "the worker failed, and newer failed pods are kept "
                                             "(spec.runPolicy.keepFailedPods)"
                                           : "the worker failed");
  }
  if (st.status.restart_count > st.spec.max_restarts) {
    Finish(st, api::phase::kFailed, api::reason::kRestartLimitExceeded,
           "workers failed " + std::to_string(st.status.restart_count) +
               " times, more than spec.elasticPolicy.maxRestarts (" + std::to_string(st.spec.max_restarts) + ")");
  }
}

// What membership and creation need to know about the workers of an active job.
struct Workers {
  std::vector<WorkerObservation> observed;
  std::set<int32_t> used_indices;
  std::vector<const PodView*> live;  // may count toward the desired number of workers (points into st.pods)
};

// Node loss: whether `p` is lost with its node (gone, or not Ready for spec's nodeUnresponsive); a lost
// pod is deleted, forced when the node is gone or the pod overstayed the force-delete grace.
bool PlanNodeLoss(Planning& st, const PodView& p) {
  auto node = st.in.nodes.find(p.node);
  bool gone = node == st.in.nodes.end();
  if (!gone && node->second.ready) return false;
  Clock::time_point lost_at = gone ? st.in.now : node->second.not_ready_since + st.spec.node_unresponsive;
  if (st.in.now < lost_at) {
    EarliestRequeue(st.plan, lost_at);
    return false;
  }
  bool overstayed = p.deleting && st.in.now >= p.deleting_since + st.spec.force_delete_grace;
  if (p.deleting && !gone && !overstayed) EarliestRequeue(st.plan, p.deleting_since + st.spec.force_delete_grace);
  DeletePod(st, p, gone ? "its node " + p.node + " no longer exists" : "its node " + p.node + " is not Ready",
            gone || overstayed);
  return true;
}

// Observe workers: which can be members, which are lost with their node, which left for good.
Workers ObserveWorkers(Planning& st) {
  Workers workers;
  std::map<std::string, std::vector<std::string>> cut_off;  // member pod -> who cannot reach it
  // The verdict prefers Ready suspects. The raw Ready condition, without ReadinessLossGraced: a
  // partitioned worker's failing probe is exactly the signal, from the moment its condition goes False.
  std::set<std::string> ready;
  for (const auto& p : st.pods)
    if (p.ready) ready.insert(p.name);
  for (auto& c : CutOffMembers(st.membership, st.in.peer_reports, ready)) cut_off[c.pod] = std::move(c.reporters);
  for (const auto& p : st.pods) {
    workers.used_indices.insert(p.index);
    WorkerObservation w;
    w.pod = p.name;
    w.uid = p.uid;
    w.index = p.index;
    w.address = p.ip;
    w.node = p.node;
    w.ready = p.ready || ReadinessLossGraced(st, p);
    w.ready_since = p.ready_since;
    w.for_scale_up = p.for_scale_up;
    w.finishing = Finishing(st, p);
    w.failed = p.phase == api::pod_phase::kFailed || (p.phase == api::pod_phase::kSucceeded && !w.finishing);
    w.beyond_desired = IsLeaving(st, p.name, p.uid);  // it left: it never joins again
    if (!p.node.empty() && !w.failed) w.node_lost = PlanNodeLoss(st, p);
    // Partitioned from its peers: it leaves the membership and its pod goes (a replacement, reachable,
    // takes its place), so the next generation does not wait on it again.
    if (const api::Member* m = st.membership.Find(p.name); m && m->uid == p.uid && cut_off.count(p.name) && !w.failed) {
      w.unreachable = true;
      std::string by;
      for (const auto& r : cut_off[p.name]) by += (by.empty() ? "" : ", ") + r;
      DeletePod(st, p,
                "its peers cannot reach it (reported by " + by + " in generation " +
                    std::to_string(st.membership.generation) + ")");
    }
    if (const api::Member* m = st.membership.Find(p.name); m && m->uid == p.uid) {
      for (const auto& r : st.in.hang_reports)  // only about the current generation: a stale one counted already
        if (r.reporter == p.name && r.generation == st.membership.generation)
          w.hung_seconds = std::max(r.stalled_seconds, 0.001);
    }
    w.disrupted = !w.failed && !w.node_lost && !w.unreachable && !p.disruption.empty();
    if (!w.failed && !w.node_lost && !w.unreachable && !p.deleting && !w.beyond_desired && !w.disrupted)
      workers.live.push_back(&p);
    workers.observed.push_back(w);
  }
  return workers;
}

// Surplus over the desired count and the spares is marked beyond_desired: members beyond the desired count
// first (from the highest rank down, so rank 0 stays put: a scale-down keeps the spares), then pods not in
// membership (newest index first), then the other members from the highest rank down.
void MarkSurplus(const Planning& st, Workers& workers) {
  const int32_t desired = st.spec.desired_workers;
  std::vector<const PodView*> members, others;
  for (const PodView* p : workers.live) (st.membership.Find(p->name) ? members : others).push_back(p);
  std::sort(members.begin(), members.end(), [&](const PodView* a, const PodView* b) {
    return st.membership.Find(a->name)->rank > st.membership.Find(b->name)->rank;
  });
  std::sort(others.begin(), others.end(), [](const PodView* a, const PodView* b) { return a->index > b->index; });
  const size_t over = members.size() > static_cast<size_t>(desired) ? members.size() - desired : 0;
  std::vector<const PodView*> order(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(over));
  order.insert(order.end(), others.begin(), others.end());
  order.insert(order.end(), members.begin() + static_cast<std::ptrdiff_t>(over), members.end());
  const int32_t surplus = std::max<int32_t>(static_cast<int32_t>(workers.live.size()) - (desired + st.spec.spares),
                                            static_cast<int32_t>(over));
  for (int32_t i = 0; i < surplus && i < static_cast<int32_t>(order.size()); ++i) {
    for (auto& w : workers.observed) {
      if (w.pod == order[i]->name) w.beyond_desired = true;
    }
  }
}

// A Hung generation was published over `hung`: counted once (its reports are about `hung`, stale from now on), with
// when each reporter's stall began for goodput (reportedAt less stalledSeconds; now when it gave no time).
void NoteHang(Planning& st, const api::Membership& hung) {
  ++st.status.hangs;
  for (const auto& r : st.in.hang_reports) {
    const api::Member* m = hung.Find(r.reporter);
    if (m == nullptr || r.generation != hung.generation) continue;
    const Clock::time_point reported = std::min(TimeOr(r.reported_at, st.in.now), st.in.now);
    st.stalls.push_back(
        {r.reporter, m->uid,
         reported - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.stalled_seconds))});
  }
}

// Membership: the next generation, when DecideMembership publishes one, with its event, the
// MembershipPublished condition and the job's start time.
MembershipDecision PublishMembership(Planning& st, const Workers& workers) {
  MembershipPolicy policy;
  policy.min_workers = st.spec.min_workers;
  policy.multiple_of = st.spec.multiple_of;
  policy.processes_per_pod = st.spec.processes_per_pod;
  policy.join_batch_window = st.spec.join_batch_window;
  policy.coordinator_port = st.spec.rendezvous_port;
  policy.max_pods = st.spec.desired_workers;
  MembershipDecision decision = DecideMembership(st.membership, workers.observed, policy, st.in.now);
  if (decision.recheck_at) EarliestRequeue(st.plan, *decision.recheck_at);
  if (decision.next) {
    const api::Membership hung = st.membership;
    st.membership = *decision.next;
    const std::string& reason = st.membership.reason;  // ReasonName(*decision.reason)
    const bool failure = decision.reason && IsFailure(*decision.reason);
    AddEvent(st, failure ? api::event_type::kWarning : api::event_type::kNormal, reason, st.membership.message);
    if (decision.reason == ChangeReason::kHung) NoteHang(st, hung);
    SetJobCondition(st, api::condition::kMembershipPublished, api::condition_status::kTrue, reason,
                    st.membership.message, /*touch=*/true);
  }
  return decision;
}

// An Event for each member that this generation let go because it is disrupted: what announced it.
void NoteDisruptedLeavers(Planning& st, const Workers& workers, const api::Membership& before) {
  if (st.membership.generation == before.generation) return;
  for (const auto& w : workers.observed) {
    const api::Member* was = before.Find(w.pod);
    if (!w.disrupted || was == nullptr || was->uid != w.uid || st.membership.Find(w.pod) != nullptr) continue;
    for (const auto& p : st.pods) {
      if (p.name != w.pod || p.uid != w.uid) continue;
      AddEvent(st, api::event_type::kNormal, ReasonName(ChangeReason::kDisrupted),
               "worker " + w.pod + " leaves generation " + std::to_string(before.generation) +
                   " at its next step boundary, its work committed: " + p.disruption);
    }
  }
}

// Members that the decision dropped to keep the world in whole groups leave as a scale-down's do (they
// never join again; PlanScaleDown gives them the leave grace) and no longer count toward the desired
// number, so their replacements are created now.
void MarkDropped(const MembershipDecision& decision, Workers& workers) {
  for (const auto& pod : decision.dropped) {
    for (auto& w : workers.observed) w.beyond_desired |= w.pod == pod;
    std::erase_if(workers.live, [&pod](const PodView* p) { return p->name == pod; });
  }
}

// Scale-down deletions. Surplus pods that never were members are deleted at once. A member that the
// scale-down just dropped (in `before`, not in the new membership) is left to commit, let the survivors
// take over and exit 0 (its pod is deleted then, by PlanExitedWorkers); it is deleted only when it is
// still running spec.elasticPolicy.leaveGraceSeconds later. Members dropped to keep whole groups
// (MarkDropped) are handled alike.
//
// Disrupted workers leave the same way: a member commits at its step boundary and exits 0 within the leave
// grace (or its deletion's grace ends it); one that never was a member is deleted at once, so that its
// replacement (created now: a disrupted worker does not count toward the desired number) can go elsewhere.
void PlanScaleDown(Planning& st, const Workers& workers, const api::Membership& before) {
  for (const auto& w : workers.observed) {
    if ((!w.beyond_desired && !w.disrupted) || w.failed || st.membership.Find(w.pod) != nullptr) continue;
    const PodView* pod = nullptr;
    for (const auto& p : st.pods)
      if (p.name == w.pod && p.uid == w.uid) pod = &p;
    if (pod == nullptr) continue;
    const api::Member* was = before.Find(w.pod);
    if (!IsLeaving(st, w.pod, w.uid) && was != nullptr && was->uid == w.uid) st.leaving[w.pod] = {w.uid, st.in.now};
    if (!IsLeaving(st, w.pod, w.uid)) {
      DeletePod(st, *pod,
                w.disrupted ? "disrupted before it joined (" + pod->disruption + ")" : "the job was scaled down");
    } else if (st.in.now >= st.leaving[w.pod].second + st.spec.leave_grace) {
      DeletePod(st, *pod,
                "it left the membership and did not exit within " + std::to_string(st.spec.leave_grace.count()) + " s");
    } else {
      EarliestRequeue(st.plan, st.leaving[w.pod].second + st.spec.leave_grace);
    }
  }
}

// Creations: workers up to the desired count, at the lowest free indices. Replacements of failed workers wait
// for the replacement backoff; the workers a scale-up asks for do not (the user asked for them now).
// Errors: those of BuildWorkerPod.
Status PlanCreations(Planning& st, const Workers& workers) {
  const int32_t desired = st.spec.desired_workers;
  const int32_t target = desired + st.spec.spares;  // the world and its warm spares
  int32_t missing = target - std::min<int32_t>(static_cast<int32_t>(workers.live.size()), target);
  if (missing <= 0) return Status::Ok();
  const int32_t before = st.current.replicas ? st.current.replicas->desired : desired;
  const bool scale_up = desired > before;
  // The backoff counts the failures that look like a crash loop: recent, and after a short run. A worker
  // killed after minutes of training (preempted without notice, OOM-killed at a peak, a chaos test) is
  // replaced at once, so a job that loses workers now and then is not held back by them.
  int32_t recent = 0;
  for (const auto& f : st.status.recent_failures) {
    const bool short_run = f.ran_seconds < 0 || std::chrono::seconds(f.ran_seconds) < kCrashLoopRun;
    recent += short_run && TimeOr(f.time, Clock::time_point{}) > st.in.now - kBackoffMemory;
  }
  const Clock::time_point allowed = st.last_failure + ReplacementBackoff(recent);
  if (recent > 0 && st.in.now < allowed) {
    EarliestRequeue(st.plan, allowed);
    if (!scale_up) return Status::Ok();
    missing = std::min(missing, desired - before);  // the scale-up's own workers only
  }
  const std::string_view created_for = scale_up                        ? api::created_for::kScaleUp
                                       : st.membership.generation == 0 ? api::created_for::kStart
                                                                       : api::created_for::kReplacement;
  for (int32_t index = 0; missing > 0; ++index) {
    if (workers.used_indices.count(index)) continue;
    RINGMASTER_ASSIGN_OR_RETURN(json pod, BuildWorkerPod(st.in.job, index, st.spec.processes_per_pod));
    if (st.in.queue) ApplyAdmissionToPod(*st.in.queue, &pod);  // the admitted flavours' nodes
    pod["metadata"]["annotations"][std::string(api::kCreatedForAnnotation)] = std::string(created_for);
    st.plan.creates.push_back(std::move(pod));
    --missing;
  }
  return Status::Ok();
}

// The first worker pod whose container will not start, as "pod P: Reason: kubelet's message"; empty if none.
std::string WorkerThatCannotStart(const Planning& st) {
  for (const auto& p : st.pods) {
    if (p.stuck_reason.empty()) continue;
    return "worker pod " + p.name + ": " + p.stuck_reason + (p.stuck_message.empty() ? "" : ": " + p.stuck_message);
  }
  return "";
}

// The first worker pod the scheduler cannot place, as "; worker pod P is Unschedulable: the scheduler's message";
// empty if none. Not a reason of its own: capacity may come (GPUs freed, a node added), so the job waits.
std::string WorkerTheSchedulerCannotPlace(const Planning& st) {
  for (const auto& p : st.pods) {
    if (!p.unschedulable.empty()) return "; worker pod " + p.name + " is Unschedulable: " + p.unschedulable;
  }
  return "";
}

// Phase and the Running condition of an active job, from its membership. While the job has fewer members
// than it needs, a worker that cannot start is the reason the user must act on, so it is named first.
void DecideRunning(Planning& st, const MembershipDecision& decision) {
  // A pod the apiserver refuses comes first: no pod of it exists to become Ready.
  const bool refused = !st.in.create_error.empty();
  const std::string cannot_start = refused ? st.in.create_error : WorkerThatCannotStart(st);
  const std::string_view cannot_start_reason = refused ? api::reason::kFailedCreate : api::reason::kWorkerCannotStart;
  if (st.membership.world_size() > 0) {
    st.phase = api::phase::kRunning;
    std::string msg = std::to_string(st.membership.pod_count()) + " workers in generation " +
                      std::to_string(st.membership.generation);
    if (st.spec.processes_per_pod > 1) msg += " (" + std::to_string(st.membership.world_size()) + " ranks)";
    // Why Ready workers stay out of a running job (spec.replicas.multipleOf).
    if (!decision.spares_waiting.empty()) msg += "; " + decision.spares_waiting;
    if (st.membership.pod_count() < st.spec.min_workers) {
      std::string below = msg + ", fewer than spec.replicas.min (" + std::to_string(st.spec.min_workers) + ")";
      if (!cannot_start.empty()) {
        SetJobCondition(st, api::condition::kRunning, api::condition_status::kFalse, cannot_start_reason,
                        cannot_start + "; " + below);
      } else {
        SetJobCondition(st, api::condition::kRunning, api::condition_status::kFalse, api::reason::kBelowMinimum,
                        below + "; waiting for replacements" + WorkerTheSchedulerCannotPlace(st));
      }
    } else {
      SetJobCondition(st, api::condition::kRunning, api::condition_status::kTrue, api::reason::kWorkersRunning, msg);
    }
  } else {
    st.phase = api::phase::kPending;
    std::string why = decision.waiting_for.empty() ? "waiting for workers to become Ready" : decision.waiting_for;
    if (!cannot_start.empty()) {
      SetJobCondition(st, api::condition::kRunning, api::condition_status::kFalse, cannot_start_reason,
                      cannot_start + "; " + why);
    } else {
      SetJobCondition(st, api::condition::kRunning, api::condition_status::kFalse, api::reason::kWaitingForWorkers,
                      why + WorkerTheSchedulerCannotPlace(st));
    }
  }
  // A worker that cannot start is also a Warning Event on the job, once per new cause (the pod's own Events say it
  // on the pod; `kubectl describe tj` should too). A refused create has its Event from the reconciler.
  if (!cannot_start.empty() && !refused) {
    bool told = false;
    for (const auto& c : st.current.conditions)
      told |= c.type == api::condition::kRunning && c.reason == api::reason::kWorkerCannotStart &&
              c.message.rfind(cannot_start, 0) == 0;
    if (!told) AddEvent(st, api::event_type::kWarning, api::reason::kWorkerCannotStart, cannot_start);
  }
}

// The workers of an active job: observe them, pick the surplus, publish membership, delete, create, and
// set the phase. Errors: those of PlanCreations.
Status PlanWorkers(Planning& st) {
  Workers workers = ObserveWorkers(st);
  MarkSurplus(st, workers);
  const api::Membership before = st.membership;
  const MembershipDecision decision = PublishMembership(st, workers);
  st.spares = decision.spares;
  NoteDisruptedLeavers(st, workers, before);
  MarkDropped(decision, workers);
  PlanScaleDown(st, workers, before);
  RINGMASTER_RETURN_IF_ERROR(PlanCreations(st, workers));
  DecideRunning(st, decision);
  return Status::Ok();
}

// The status to write: replica counts as observed now, phase, restarts, failures, the leaving workers
// whose pods still exist, and membership; put in the plan only when it differs from the job's.
// status.goodput (goodput.h): the job's current goodput accounting, with when each member this status drops was
// lost as its pod or node shows it.
std::optional<api::Goodput> AccountedGoodput(const Planning& st) {
  const int32_t desired_before = st.current.replicas ? st.current.replicas->desired : st.requested_desired;
  GoodputInput in{st.current.goodput,
                  st.current.membership.value_or(api::Membership{}),
                  st.membership,
                  st.spec.desired_workers * st.spec.processes_per_pod,
                  desired_before != st.requested_desired ? desired_before * st.spec.processes_per_pod : 0,
                  st.status.recent_failures,
                  st.stalls,
                  st.in.progress,
                  st.status.start_time,
                  st.status.completion_time,
                  st.in.now};
  for (const auto& p : st.pods) {
    const api::Member* was = in.before.Find(p.name);
    if (was == nullptr || was->uid != p.uid || st.membership.Find(p.name) != nullptr) continue;
    auto node = st.in.nodes.find(p.node);
    if (p.phase == api::pod_phase::kFailed && p.finished_at != Clock::time_point{})
      in.observed_failures.push_back({p.name, p.uid, p.finished_at});
    else if (p.deleting)
      in.observed_failures.push_back({p.name, p.uid, p.deleting_since});
    else if (node != st.in.nodes.end() && !node->second.ready)
      in.observed_failures.push_back({p.name, p.uid, node->second.not_ready_since});
    else if (p.not_ready_since)
      in.observed_failures.push_back({p.name, p.uid, *p.not_ready_since});
  }
  return AccountGoodput(in);
}

void AssembleStatus(Planning& st) {
  int32_t ready = 0, pending = 0, active = 0, failed = 0;
  for (const auto& p : st.pods) {
    if (p.phase == api::pod_phase::kFailed)
      ++failed;
    else if (p.phase != api::pod_phase::kSucceeded && !p.deleting)
      ++active;
    if (p.ready)
      ++ready;
    else if ((p.phase == api::pod_phase::kPending || p.phase.empty()) && !p.deleting)
      ++pending;
  }
  api::TrainingJobStatus& status = st.status;
  status.replicas = api::ReplicaCounts{st.requested_desired, active, ready, pending, failed, st.spares};
  status.phase = st.phase.empty() ? std::string(api::phase::kPending) : st.phase;
  status.leaving.clear();
  for (const auto& [pod, entry] : st.leaving) {
    bool exists = false;
    for (const auto& p : st.pods) exists |= p.name == pod && p.uid == entry.first;
    if (exists && !Finished(st.phase)) status.leaving.push_back({pod, entry.first, FormatRfc3339(entry.second)});
  }
  if (st.membership.generation > 0) status.membership = st.membership;
  status.goodput = AccountedGoodput(st);
  if (status != st.current) st.plan.status = api::TrainingJobStatusToJson(status);
}

}  // namespace

JobSpec AdmittedSpec(const JobSpec& spec, const std::optional<QueueAdmission>& queue) {
  JobSpec out = spec;
  if (!queue || !queue->admitted) return out;
  // Kueue admits between minCount (spec.replicas.min) and the asked count of pods: the world gets at most that
  // many, in whole groups of spec.replicas.multipleOf, and the spares what is left.
  const int32_t cap = std::max(queue->admitted_count, 0);
  const int32_t group = std::max(spec.pods_per_group(), 1);
  out.desired_workers = std::min(spec.desired_workers, cap - cap % group);
  out.desired_workers = std::max(out.desired_workers, std::min(spec.min_workers, spec.desired_workers));
  out.spares = std::clamp(cap - out.desired_workers, 0, spec.spares);
  return out;
}

std::chrono::seconds ReplacementBackoff(int32_t restarts) {
  if (restarts <= 0) return std::chrono::seconds(0);
  int shift = std::min(restarts - 1, 6);
  return std::chrono::seconds(std::min<int64_t>(int64_t{1} << shift, 60));
}

// Observe (Planning's constructor), decide the phase (finished, suspended, deadline, completion, schedule
// timeout, restart limit), then plan the workers of an active job, and assemble the status.
StatusOr<JobPlan> PlanJob(const PlanInput& in) {
  RINGMASTER_ASSIGN_OR_RETURN(const api::TrainingJob job, api::DecodeTrainingJob(in.job));
  RINGMASTER_ASSIGN_OR_RETURN(const JobSpec spec, ParseJobSpec(job.spec));
  if (!job.metadata.deletion_timestamp.empty()) return JobPlan{};  // garbage collection owns the rest
  const JobSpec effective = AdmittedSpec(spec, in.queue);
  Planning st(in, job, effective, spec.desired_workers);
  if (Finished(st.phase))
    PlanFinishedJob(st);
  else if (spec.suspend)
    PlanSuspension(st, api::reason::kSuspended, "spec.runPolicy.suspend is true");
  else if (in.queue && !in.queue->admitted)
    PlanQueued(st, *in.queue);
  else
    PlanResumeAndDeadline(st);
  if (Active(st)) DecideCompletion(st);
  if (Active(st)) PlanScheduleTimeout(st);
  if (Active(st)) PlanExitedWorkers(st);
  if (Active(st)) RINGMASTER_RETURN_IF_ERROR(PlanWorkers(st));
  AssembleStatus(st);
  return std::move(st.plan);
}

}  // namespace ringmaster::controller
