#include "controller/job_plan.h"

#include <algorithm>
#include <set>

#include "base/json_path.h"
#include "controller/membership.h"
#include "base/time_format.h"
#include "controller/worker_objects.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

constexpr size_t kRecentFailuresKept = 20;
// A member that exits 0 has most likely finished the training with its peers, and rank 0's exit (which
// completes the job) is moments away: it stays a member, and is not replaced, for this long. Likewise
// workers still running when rank 0's exit completed the job get this long to exit before cleanup.
constexpr std::chrono::seconds kFinishGrace{10};

// What the plan needs to know about one worker pod.
struct PodView {
  std::string name, uid, node, ip, phase;
  int32_t index = -1;
  bool ready = false;
  bool deleting = false;
  Clock::time_point deleting_since{};
  Clock::time_point ready_since{};
  int exit_code = 0;
  std::string exit_reason;
  Clock::time_point finished_at{};  // when its container terminated (valid when phase is Succeeded/Failed)
  bool for_scale_up = false;
};


Clock::time_point TimeOr(const std::string& s, Clock::time_point fallback) { return ParseRfc3339(s).value_or(fallback); }

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
  v.for_scale_up = StringAt(meta, {"annotations", kCreatedForAnnotation}) == "ScaleUp";
  if (meta.contains("deletionTimestamp")) {
    v.deleting = true;
    v.deleting_since = TimeOr(StringAt(meta, {"deletionTimestamp"}), now);
  }
  for (const auto& c : ArrayAt(status, {"conditions"})) {
    if (StringAt(c, {"type"}) == "Ready" && StringAt(c, {"status"}) == "True") {
      v.ready = v.phase == "Running" && !v.deleting;
      v.ready_since = TimeOr(StringAt(c, {"lastTransitionTime"}), now);
    }
  }
  for (const auto& cs : ArrayAt(status, {"containerStatuses"})) {
    if (cs.contains("state") && cs["state"].contains("terminated")) {
      const json& t = cs["state"]["terminated"];
      if (t.value("exitCode", 0) != 0 || v.exit_reason.empty()) {
        v.exit_code = t.value("exitCode", 0);
        v.exit_reason = StringAt(t, {"reason"});
        v.finished_at = TimeOr(StringAt(t, {"finishedAt"}), now);
      }
    }
  }
  return v;
}

// Sets condition `type` in `conditions`. lastTransitionTime moves when the status flips, or on every
// call when `touch` (the membership condition records each change).
void SetCondition(json& conditions, const std::string& type, const std::string& status, const std::string& reason,
                  const std::string& message, const std::string& now, int64_t observed_generation, bool touch = false) {
  for (auto& c : conditions) {
    if (StringAt(c, {"type"}) != type) continue;
    bool flipped = StringAt(c, {"status"}) != status;
    bool changed = flipped || StringAt(c, {"reason"}) != reason || StringAt(c, {"message"}) != message;
    c["status"] = status;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = observed_generation;
    if (flipped || (touch && changed)) c["lastTransitionTime"] = now;
    return;
  }
  conditions.push_back({{"type", type}, {"status", status}, {"reason", reason}, {"message", message},
                        {"lastTransitionTime", now}, {"observedGeneration", observed_generation}});
}

void EarliestRequeue(JobPlan& plan, Clock::time_point at) {
  if (!plan.requeue_at || at < *plan.requeue_at) plan.requeue_at = at;
}

bool Finished(const std::string& phase) { return phase == "Succeeded" || phase == "Failed"; }

}  // namespace

std::chrono::seconds ReplacementBackoff(int32_t restarts) {
  if (restarts <= 0) return std::chrono::seconds(0);
  int shift = std::min(restarts - 1, 6);
  return std::chrono::seconds(std::min<int64_t>(int64_t{1} << shift, 60));
}

StatusOr<JobPlan> PlanJob(const PlanInput& in) {
  RINGMASTER_ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpec(in.job));
  JobPlan plan;
  const json& meta = At(in.job, {"metadata"});
  if (meta.contains("deletionTimestamp")) return plan;  // garbage collection owns the rest
  const std::string job_name = StringAt(meta, {"name"});
  const int64_t generation = IntAt(in.job, {"metadata", "generation"});
  const std::string now_s = FormatRfc3339(in.now);

  const json current_status = in.job.contains("status") && in.job["status"].is_object() ? in.job["status"] : json::object();
  json status = current_status;
  if (!status.contains("conditions") || !status["conditions"].is_array()) status["conditions"] = json::array();
  RINGMASTER_ASSIGN_OR_RETURN(Membership membership,
                              MembershipFromJson(current_status.value("membership", json(nullptr))));
  int32_t restarts = current_status.value("restartCount", 0);
  json failures = current_status.value("recentFailures", json::array());
  // Workers dropped from membership by a scale-down that have not exited yet: pod name -> {uid, since}.
  std::map<std::string, std::pair<std::string, Clock::time_point>> leaving;
  for (const auto& l : ArrayAt(current_status, {"leaving"})) {
    leaving[StringAt(l, {"pod"})] = {StringAt(l, {"uid"}), TimeOr(StringAt(l, {"since"}), in.now)};
  }
  auto is_leaving = [&](const std::string& pod, const std::string& uid) {
    auto it = leaving.find(pod);
    return it != leaving.end() && it->second.first == uid;
  };
  std::string phase = StringAt(current_status, {"phase"});
  status["selector"] = WorkerSelector(job_name);
  status["observedGeneration"] = generation;

  std::vector<PodView> pods;
  for (const auto& p : in.pods) pods.push_back(ViewPod(p, in.now));
  std::sort(pods.begin(), pods.end(), [](const PodView& a, const PodView& b) { return a.index < b.index; });

  auto delete_pod = [&](const PodView& p, const std::string& why, bool force = false) {
    if (p.deleting && !force) return;
    plan.deletes.push_back(PodDeletion{p.name, p.uid, force, why});
  };
  auto finish = [&](const std::string& final_phase, const std::string& reason, const std::string& message) {
    phase = final_phase;
    status["completionTime"] = now_s;
    SetCondition(status["conditions"], final_phase, "True", reason, message, now_s, generation);
    SetCondition(status["conditions"], "Running", "False", reason, message, now_s, generation);
    plan.events.push_back({final_phase == "Failed" ? "Warning" : "Normal", reason, message});
  };

  // 1. A finished job only cleans up and, with a TTL, deletes itself.
  if (Finished(phase)) {
    // Workers still running when the job succeeded are most likely finishing too (rank 0 was just the
    // first to exit): they get kFinishGrace to exit by themselves before their pods are deleted.
    const Clock::time_point done = TimeOr(StringAt(current_status, {"completionTime"}), in.now);
    const bool settling = phase == "Succeeded" && in.now < done + kFinishGrace;
    for (const auto& p : pods) {
      bool running = p.phase == "Running" || p.phase == "Pending" || p.phase.empty();
      if (spec.clean_pod_policy == CleanPodPolicy::kAll || (spec.clean_pod_policy == CleanPodPolicy::kRunning && running)) {
        if (running && settling) {
          EarliestRequeue(plan, done + kFinishGrace);
          continue;
        }
        delete_pod(p, "the job has finished");
      }
    }
    if (spec.ttl_after_finished) {
      if (in.now >= done + *spec.ttl_after_finished) plan.delete_job = true;
      else EarliestRequeue(plan, done + *spec.ttl_after_finished);
    }
  } else if (spec.suspend) {
    // 2. Suspended: no workers; status (restart count, membership history) is kept.
    for (const auto& p : pods) delete_pod(p, "the job is suspended");
    if (phase != "Suspended") plan.events.push_back({"Normal", "Suspended", "the job is suspended; its workers are deleted"});
    phase = "Suspended";
    SetCondition(status["conditions"], "Suspended", "True", "Suspended", "spec.runPolicy.suspend is true", now_s, generation);
    SetCondition(status["conditions"], "Running", "False", "Suspended", "the job is suspended", now_s, generation);
    if (membership.world_size() > 0) {
      Membership empty;
      empty.generation = membership.generation + 1;
      empty.reason = "Suspended";
      empty.message = "generation " + std::to_string(empty.generation) + ", world size 0 (the job is suspended)";
      empty.changed_at = now_s;
      membership = empty;
    }
  } else {
    if (phase == "Suspended") {
      plan.events.push_back({"Normal", "Resumed", "the job is resumed; its workers are recreated"});
      SetCondition(status["conditions"], "Suspended", "False", "Resumed", "spec.runPolicy.suspend is false", now_s, generation);
      phase = "Pending";
    }
    // 3. Active deadline.
    if (spec.active_deadline && current_status.contains("startTime")) {
      Clock::time_point started = TimeOr(StringAt(current_status, {"startTime"}), in.now);
      if (in.now >= started + *spec.active_deadline) {
        finish("Failed", "DeadlineExceeded",
               "the job ran longer than spec.runPolicy.activeDeadlineSeconds (" + std::to_string(spec.active_deadline->count()) + " s)");
      } else {
        EarliestRequeue(plan, started + *spec.active_deadline);
      }
    }
  }

  if (!Finished(phase) && phase != "Suspended") {
    // 4. Completion: the worker holding rank 0 in the current membership exited 0.
    const Member* rank0 = membership.members.empty() ? nullptr : &membership.members[0];
    for (const auto& p : pods) {
      if (rank0 && p.phase == "Succeeded" && p.name == rank0->pod && p.uid == rank0->uid) {
        finish("Succeeded", "Completed", "rank 0 (" + p.name + ") exited 0");
      }
    }
  }

  if (!Finished(phase) && phase != "Suspended") {
    // 5. Failed workers: counted once (recentFailures remembers their uids), then deleted.
    auto finishing = [&](const PodView& p) {
      const Member* m = membership.Find(p.name);
      return p.phase == "Succeeded" && m != nullptr && m->uid == p.uid && in.now < p.finished_at + kFinishGrace;
    };
    std::set<std::string> counted;
    for (const auto& f : failures) counted.insert(StringAt(f, {"uid"}));
    Clock::time_point last_failure{};
    for (const auto& f : failures) last_failure = std::max(last_failure, TimeOr(StringAt(f, {"time"}), Clock::time_point{}));
    for (const auto& p : pods) {
      if (finishing(p)) {
        EarliestRequeue(plan, p.finished_at + kFinishGrace);
        continue;
      }
      bool exited = p.phase == "Failed" || (p.phase == "Succeeded" && !(membership.Find(p.name) == nullptr));
      if (p.phase == "Succeeded" && membership.Find(p.name) == nullptr) {
        delete_pod(p, "the worker left after it was removed from membership");
        continue;
      }
      if (!exited) continue;
      if (!counted.count(p.uid) && p.phase == "Failed") {
        ++restarts;
        last_failure = in.now;
        std::string message = "worker " + p.name + " failed (exit code " + std::to_string(p.exit_code) +
                              (p.exit_reason.empty() ? "" : ", " + p.exit_reason) + ")";
        failures.push_back({{"pod", p.name}, {"uid", p.uid}, {"exitCode", p.exit_code}, {"reason", p.exit_reason},
                            {"time", now_s}});
        plan.events.push_back({"Warning", "WorkerFailed", message});
      }
      delete_pod(p, p.phase == "Failed" ? "the worker failed" : "the worker exited while still a member");
    }
    while (failures.size() > kRecentFailuresKept) failures.erase(failures.begin());
    if (restarts > spec.max_restarts) {
      finish("Failed", "RestartLimitExceeded",
             "workers failed " + std::to_string(restarts) + " times, more than spec.elasticPolicy.maxRestarts (" +
                 std::to_string(spec.max_restarts) + ")");
    }

    if (!Finished(phase)) {
      // 6. Observe: which workers can be members, which are lost with their node, which are surplus.
      std::vector<WorkerObservation> observed;
      std::set<int32_t> used_indices;
      std::vector<const PodView*> live;  // may count toward the desired number of workers
      for (const auto& p : pods) {
        used_indices.insert(p.index);
        WorkerObservation w;
        w.pod = p.name;
        w.uid = p.uid;
        w.index = p.index;
        w.address = p.ip;
        w.node = p.node;
        w.ready = p.ready;
        w.ready_since = p.ready_since;
        w.for_scale_up = p.for_scale_up;
        w.finishing = finishing(p);
        w.failed = p.phase == "Failed" || (p.phase == "Succeeded" && !w.finishing);
        w.beyond_desired = is_leaving(p.name, p.uid);  // it left: it never joins again
        if (!p.node.empty() && !w.failed) {
          auto node = in.nodes.find(p.node);
          bool gone = node == in.nodes.end();
          if (gone || !node->second.ready) {
            Clock::time_point lost_at = gone ? in.now : node->second.not_ready_since + spec.node_unresponsive;
            if (in.now >= lost_at) {
              w.node_lost = true;
              bool overstayed = p.deleting && in.now >= p.deleting_since + spec.force_delete_grace;
              if (p.deleting && !gone && !overstayed) EarliestRequeue(plan, p.deleting_since + spec.force_delete_grace);
              delete_pod(p, gone ? "its node " + p.node + " no longer exists" : "its node " + p.node + " is not Ready",
                         gone || overstayed);
            } else {
              EarliestRequeue(plan, lost_at);
            }
          }
        }
        if (!w.failed && !w.node_lost && !p.deleting && !w.beyond_desired) live.push_back(&p);
        observed.push_back(w);
      }

      // Surplus over the desired count leaves: pods not in membership first (newest index first), then
      // members from the highest rank down, so rank 0 stays put.
      int32_t surplus = static_cast<int32_t>(live.size()) - spec.desired_workers;
      if (surplus > 0) {
        std::vector<const PodView*> order = live;
        std::stable_sort(order.begin(), order.end(), [&](const PodView* a, const PodView* b) {
          const Member* ma = membership.Find(a->name);
          const Member* mb = membership.Find(b->name);
          if ((ma == nullptr) != (mb == nullptr)) return ma == nullptr;
          if (ma && mb) return ma->rank > mb->rank;
          return a->index > b->index;
        });
        for (int32_t i = 0; i < surplus; ++i) {
          for (auto& w : observed) {
            if (w.pod == order[i]->name) w.beyond_desired = true;
          }
        }
      }

      MembershipPolicy policy;
      policy.min_workers = spec.min_workers;
      policy.join_batch_window = spec.join_batch_window;
      policy.coordinator_port = kCoordinatorPort;
      const Membership before = membership;
      MembershipDecision decision = DecideMembership(membership, observed, policy, in.now);
      if (decision.recheck_at) EarliestRequeue(plan, *decision.recheck_at);
      if (decision.next) {
        membership = *decision.next;
        bool warning = membership.reason == "WorkerFailed" || membership.reason == "NodeLost" || membership.reason == "WorkerRemoved";
        plan.events.push_back({warning ? "Warning" : "Normal", membership.reason, membership.message});
        SetCondition(status["conditions"], "MembershipPublished", "True", membership.reason, membership.message, now_s,
                     generation, /*touch=*/true);
        if (!status.contains("startTime") && membership.world_size() > 0) status["startTime"] = now_s;
      }
      // Surplus pods that never were members are deleted at once. A member that the scale-down just
      // dropped is left to commit, let the survivors take over and exit 0 (its pod is deleted then, in
      // step 5); it is deleted only when it is still running spec.elasticPolicy.leaveGraceSeconds later.
      for (const auto& w : observed) {
        if (!w.beyond_desired || w.failed || membership.Find(w.pod) != nullptr) continue;
        const PodView* pod = nullptr;
        for (const auto& p : pods)
          if (p.name == w.pod && p.uid == w.uid) pod = &p;
        if (pod == nullptr) continue;
        const Member* was = before.Find(w.pod);
        if (!is_leaving(w.pod, w.uid) && was != nullptr && was->uid == w.uid) leaving[w.pod] = {w.uid, in.now};
        if (!is_leaving(w.pod, w.uid)) {
          delete_pod(*pod, "the job was scaled down");
        } else if (in.now >= leaving[w.pod].second + spec.leave_grace) {
          delete_pod(*pod, "it was scaled down and did not exit within " + std::to_string(spec.leave_grace.count()) + " s");
        } else {
          EarliestRequeue(plan, leaving[w.pod].second + spec.leave_grace);
        }
      }

      // 7. Create workers up to the desired count, at the lowest free indices, after the backoff.
      int32_t missing = spec.desired_workers - std::min<int32_t>(static_cast<int32_t>(live.size()), spec.desired_workers);
      if (missing > 0) {
        Clock::time_point allowed = last_failure + ReplacementBackoff(restarts);
        if (restarts > 0 && in.now < allowed) {
          EarliestRequeue(plan, allowed);
        } else {
          const bool scale_up =
              spec.desired_workers > current_status.value("replicas", json::object()).value("desired", spec.desired_workers);
          const char* created_for = scale_up ? "ScaleUp" : (membership.generation == 0 ? "Start" : "Replacement");
          for (int32_t index = 0; missing > 0; ++index) {
            if (used_indices.count(index)) continue;
            RINGMASTER_ASSIGN_OR_RETURN(json pod, BuildWorkerPod(in.job, index));
            pod["metadata"]["annotations"][kCreatedForAnnotation] = created_for;
            plan.creates.push_back(std::move(pod));
            --missing;
          }
        }
      }

      // 8. Phase and the Running condition.
      if (membership.world_size() > 0) {
        phase = "Running";
        std::string msg = std::to_string(membership.world_size()) + " workers in generation " + std::to_string(membership.generation);
        if (membership.world_size() < spec.min_workers) {
          SetCondition(status["conditions"], "Running", "False", "BelowMinimum",
                       msg + ", fewer than spec.replicas.min (" + std::to_string(spec.min_workers) + "); waiting for replacements",
                       now_s, generation);
        } else {
          SetCondition(status["conditions"], "Running", "True", "WorkersRunning", msg, now_s, generation);
        }
      } else {
        phase = "Pending";
        std::string why = decision.waiting_for.empty() ? "waiting for workers to become Ready" : decision.waiting_for;
        SetCondition(status["conditions"], "Running", "False", "WaitingForWorkers", why, now_s, generation);
      }
    }
  }

  // Replica counts as observed now.
  int32_t ready = 0, pending = 0, active = 0, failed = 0;
  for (const auto& p : pods) {
    if (p.phase == "Failed") ++failed;
    else if (p.phase != "Succeeded" && !p.deleting) ++active;
    if (p.ready) ++ready;
    else if ((p.phase == "Pending" || p.phase.empty()) && !p.deleting) ++pending;
  }
  status["replicas"] = {{"desired", spec.desired_workers}, {"active", active}, {"ready", ready}, {"pending", pending},
                        {"failed", failed}};
  status["phase"] = phase.empty() ? "Pending" : phase;
  status["restartCount"] = restarts;
  status["recentFailures"] = failures;
  // Leaving workers are remembered while their pods exist.
  json leaving_json = json::array();
  for (const auto& [pod, entry] : leaving) {
    bool exists = false;
    for (const auto& p : pods) exists |= p.name == pod && p.uid == entry.first;
    if (exists && !Finished(phase)) leaving_json.push_back({{"pod", pod}, {"uid", entry.first}, {"since", FormatRfc3339(entry.second)}});
  }
  if (leaving_json.empty()) status.erase("leaving");
  else status["leaving"] = leaving_json;
  if (membership.generation > 0) status["membership"] = MembershipToJson(membership);
  if (status != current_status) plan.status = status;
  return plan;
}

}  // namespace ringmaster::controller
