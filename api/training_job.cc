#include "api/training_job.h"

#include <functional>

#include "api/json_fields.h"
#include "api/names.h"

namespace ringmaster::api {

using json = nlohmann::json;

namespace {

// Decodes each element of the array at obj[key] with `decode(element, "<path>[i]")`.
template <typename T>
Status ReadList(const json& obj, const std::string& prefix, const char* key, std::vector<T>* out,
                const std::function<StatusOr<T>(const json&, const std::string&)>& decode) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* list, ArrayField(obj, prefix, key));
  if (list == nullptr) return Status::Ok();
  for (size_t i = 0; i < list->size(); ++i) {
    RINGMASTER_ASSIGN_OR_RETURN(T item, decode((*list)[i], FieldPath(prefix, key) + "[" + std::to_string(i) + "]"));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

// The object at obj[key] (null when absent); wrong type is an error naming the path.
StatusOr<json> Section(const json& obj, const std::string& prefix, const char* key) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* section, ObjectField(obj, prefix, key));
  return section == nullptr ? json(nullptr) : *section;
}

StatusOr<ObjectMeta> DecodeMeta(const json& j) {
  ObjectMeta m;
  RINGMASTER_ASSIGN_OR_RETURN(json meta, Section(j, "", "metadata"));
  RINGMASTER_RETURN_IF_ERROR(ReadString(meta, "metadata", "name", &m.name));
  RINGMASTER_RETURN_IF_ERROR(ReadString(meta, "metadata", "namespace", &m.ns));
  RINGMASTER_RETURN_IF_ERROR(ReadString(meta, "metadata", "uid", &m.uid));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(meta, "metadata", "generation", &m.generation));
  RINGMASTER_RETURN_IF_ERROR(ReadString(meta, "metadata", "deletionTimestamp", &m.deletion_timestamp));
  return m;
}

Status DecodePolicies(const json& spec, TrainingJobSpec* out) {
  RINGMASTER_ASSIGN_OR_RETURN(json ep, Section(spec, "spec", "elasticPolicy"));
  const std::string e = "spec.elasticPolicy";
  RINGMASTER_RETURN_IF_ERROR(ReadInt(ep, e, "joinBatchWindowSeconds", &out->elastic_policy.join_batch_window_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(ep, e, "nodeUnresponsiveSeconds", &out->elastic_policy.node_unresponsive_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(ep, e, "maxRestarts", &out->elastic_policy.max_restarts));
  RINGMASTER_RETURN_IF_ERROR(
      ReadInt(ep, e, "forceDeleteGraceSeconds", &out->elastic_policy.force_delete_grace_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(ep, e, "leaveGraceSeconds", &out->elastic_policy.leave_grace_seconds));
  RINGMASTER_ASSIGN_OR_RETURN(json rp, Section(spec, "spec", "runPolicy"));
  const std::string r = "spec.runPolicy";
  if (rp.is_object() && rp.contains("suspend") && !rp["suspend"].is_null()) {
    bool suspend = false;
    RINGMASTER_RETURN_IF_ERROR(ReadBool(rp, r, "suspend", &suspend));
    out->run_policy.suspend = suspend;
  }
  RINGMASTER_RETURN_IF_ERROR(ReadInt(rp, r, "ttlSecondsAfterFinished", &out->run_policy.ttl_seconds_after_finished));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(rp, r, "activeDeadlineSeconds", &out->run_policy.active_deadline_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadString(rp, r, "cleanPodPolicy", &out->run_policy.clean_pod_policy));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(rp, r, "keepFailedPods", &out->run_policy.keep_failed_pods));
  return Status::Ok();
}

StatusOr<Condition> DecodeCondition(const json& j, const std::string& path) {
  if (!j.is_object()) return WrongType(path, "object", j);
  Condition c;
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "type", &c.type));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "status", &c.status));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "reason", &c.reason));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "message", &c.message));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "lastTransitionTime", &c.last_transition_time));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "observedGeneration", &c.observed_generation));
  return c;
}

StatusOr<FailureRecord> DecodeFailure(const json& j, const std::string& path) {
  if (!j.is_object()) return WrongType(path, "object", j);
  FailureRecord f;
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "pod", &f.pod));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "uid", &f.uid));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "exitCode", &f.exit_code));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "reason", &f.reason));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "time", &f.time));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "ranSeconds", &f.ran_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "node", &f.node));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "gpu", &f.gpu));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "message", &f.message));
  return f;
}

StatusOr<LeavingWorker> DecodeLeaving(const json& j, const std::string& path) {
  if (!j.is_object()) return WrongType(path, "object", j);
  LeavingWorker l;
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "pod", &l.pod));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "uid", &l.uid));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "since", &l.since));
  return l;
}

StatusOr<std::optional<ReplicaCounts>> DecodeCounts(const json& status) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* r, ObjectField(status, "status", "replicas"));
  if (r == nullptr) return std::optional<ReplicaCounts>();
  ReplicaCounts c;
  const std::string p = "status.replicas";
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*r, p, "desired", &c.desired));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*r, p, "active", &c.active));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*r, p, "ready", &c.ready));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*r, p, "pending", &c.pending));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*r, p, "failed", &c.failed));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*r, p, "spares", &c.spares));
  return std::optional<ReplicaCounts>(c);
}

// A number field (integer or not: the apiserver writes 3.0 back as 3); absent or null leaves *out untouched.
Status ReadNumber(const json& obj, const std::string& prefix, const char* key, double* out) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return Status::Ok();
  if (!obj[key].is_number()) return WrongType(FieldPath(prefix, key), "number", obj[key]);
  *out = obj[key].get<double>();
  return Status::Ok();
}

StatusOr<std::optional<Goodput>> DecodeGoodput(const json& status) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* g, ObjectField(status, "status", "goodput"));
  if (g == nullptr) return std::optional<Goodput>();
  Goodput out;
  const std::string p = "status.goodput";
  RINGMASTER_RETURN_IF_ERROR(ReadNumber(*g, p, "ratio", &out.ratio));
  RINGMASTER_RETURN_IF_ERROR(ReadNumber(*g, p, "productiveSeconds", &out.productive_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadNumber(*g, p, "wallSeconds", &out.wall_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadString(*g, p, "asOf", &out.as_of));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*g, p, "accountedGeneration", &out.accounted_generation));
  RINGMASTER_ASSIGN_OR_RETURN(const json* lost, ObjectField(*g, p, "lostSeconds"));
  if (lost != nullptr) {
    const std::string l = p + ".lostSeconds";
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*lost, l, "detect", &out.lost_seconds.detect));
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*lost, l, "reschedule", &out.lost_seconds.reschedule));
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*lost, l, "rebuild", &out.lost_seconds.rebuild));
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*lost, l, "restore", &out.lost_seconds.restore));
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*lost, l, "replay", &out.lost_seconds.replay));
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*lost, l, "hung", &out.lost_seconds.hung));
  }
  RINGMASTER_RETURN_IF_ERROR(ReadInt(*g, p, "failures", &out.failures));
  if (g->contains("lastRecoverySeconds") && !(*g)["lastRecoverySeconds"].is_null()) {
    double seconds = 0;
    RINGMASTER_RETURN_IF_ERROR(ReadNumber(*g, p, "lastRecoverySeconds", &seconds));
    out.last_recovery_seconds = seconds;
  }
  RINGMASTER_RETURN_IF_ERROR(ReadString(*g, p, "recoveringSince", &out.recovering_since));
  return std::optional<Goodput>(out);
}

// Sets j[key] = value unless value is empty.
void SetIfNotEmpty(json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}
void SetIfPresent(json& j, const char* key, const std::optional<int64_t>& value) {
  if (value) j[key] = *value;
}

}  // namespace

std::string Describe(const ObjectMeta& meta) {
  std::string out(kKind);
  if (!meta.ns.empty())
    out += " " + meta.ns + "/" + meta.name;
  else if (!meta.name.empty())
    out += " " + meta.name;
  return out;
}

StatusOr<TrainingJobSpec> DecodeTrainingJobSpec(const json& spec) {
  TrainingJobSpec out;
  if (spec.is_null()) return out;
  if (!spec.is_object()) return WrongType("spec", "object", spec);
  RINGMASTER_ASSIGN_OR_RETURN(json replicas, Section(spec, "spec", "replicas"));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(replicas, "spec.replicas", "min", &out.replicas.min));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(replicas, "spec.replicas", "max", &out.replicas.max));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(replicas, "spec.replicas", "desired", &out.replicas.desired));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(replicas, "spec.replicas", "multipleOf", &out.replicas.multiple_of));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(replicas, "spec.replicas", "spares", &out.replicas.spares));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(spec, "spec", "processesPerPod", &out.processes_per_pod));
  RINGMASTER_RETURN_IF_ERROR(ReadObject(spec, "spec", "template", &out.pod_template));
  RINGMASTER_ASSIGN_OR_RETURN(json checkpoint, Section(spec, "spec", "checkpoint"));
  RINGMASTER_RETURN_IF_ERROR(ReadString(checkpoint, "spec.checkpoint", "volumeName", &out.checkpoint.volume_name));
  RINGMASTER_RETURN_IF_ERROR(ReadString(checkpoint, "spec.checkpoint", "path", &out.checkpoint.path));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(checkpoint, "spec.checkpoint", "keep", &out.checkpoint.keep));
  RINGMASTER_RETURN_IF_ERROR(DecodePolicies(spec, &out));
  RINGMASTER_ASSIGN_OR_RETURN(json scheduling, Section(spec, "spec", "scheduling"));
  RINGMASTER_RETURN_IF_ERROR(
      ReadString(scheduling, "spec.scheduling", "priorityClassName", &out.scheduling.priority_class_name));
  RINGMASTER_RETURN_IF_ERROR(
      ReadString(scheduling, "spec.scheduling", "schedulerName", &out.scheduling.scheduler_name));
  RINGMASTER_RETURN_IF_ERROR(
      ReadInt(scheduling, "spec.scheduling", "scheduleTimeoutSeconds", &out.scheduling.schedule_timeout_seconds));
  RINGMASTER_ASSIGN_OR_RETURN(const json* gang, ObjectField(scheduling, "spec.scheduling", "gang"));
  if (gang != nullptr) {
    out.scheduling.gang.emplace();
    RINGMASTER_RETURN_IF_ERROR(
        ReadInt(*gang, "spec.scheduling.gang", "timeoutSeconds", &out.scheduling.gang->timeout_seconds));
  }
  RINGMASTER_ASSIGN_OR_RETURN(json ports, Section(spec, "spec", "ports"));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(ports, "spec.ports", "rendezvous", &out.ports.rendezvous));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(ports, "spec.ports", "metrics", &out.ports.metrics));
  return out;
}

StatusOr<TrainingJobStatus> DecodeTrainingJobStatus(const json& status) {
  TrainingJobStatus out;
  if (status.is_null()) return out;
  if (!status.is_object()) return WrongType("status", "object", status);
  const std::string s = "status";
  RINGMASTER_RETURN_IF_ERROR(ReadInt(status, s, "observedGeneration", &out.observed_generation));
  RINGMASTER_RETURN_IF_ERROR(ReadString(status, s, "phase", &out.phase));
  RINGMASTER_RETURN_IF_ERROR(ReadString(status, s, "selector", &out.selector));
  RINGMASTER_RETURN_IF_ERROR(ReadList<Condition>(status, s, "conditions", &out.conditions, DecodeCondition));
  RINGMASTER_ASSIGN_OR_RETURN(out.replicas, DecodeCounts(status));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(status, s, "restartCount", &out.restart_count));
  RINGMASTER_RETURN_IF_ERROR(ReadList<FailureRecord>(status, s, "recentFailures", &out.recent_failures, DecodeFailure));
  RINGMASTER_RETURN_IF_ERROR(ReadList<LeavingWorker>(status, s, "leaving", &out.leaving, DecodeLeaving));
  RINGMASTER_RETURN_IF_ERROR(ReadString(status, s, "startTime", &out.start_time));
  RINGMASTER_RETURN_IF_ERROR(ReadString(status, s, "completionTime", &out.completion_time));
  if (status.contains("membership") && !status["membership"].is_null()) {
    RINGMASTER_ASSIGN_OR_RETURN(out.membership, MembershipFromJson(status["membership"], "status.membership"));
  }
  RINGMASTER_ASSIGN_OR_RETURN(out.goodput, DecodeGoodput(status));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(status, s, "hangs", &out.hangs));
  return out;
}

StatusOr<TrainingJob> DecodeTrainingJob(const json& j) {
  if (!j.is_object()) return WrongType(kKind, "object", j);
  TrainingJob job;
  RINGMASTER_ASSIGN_OR_RETURN(job.metadata, DecodeMeta(j));
  const std::string what = Describe(job.metadata);
  auto spec = DecodeTrainingJobSpec(j.contains("spec") ? j["spec"] : json(nullptr));
  if (!spec.ok()) return spec.status().WithContext(what);
  job.spec = std::move(*spec);
  auto status = DecodeTrainingJobStatus(j.contains("status") ? j["status"] : json(nullptr));
  if (!status.ok()) return status.status().WithContext(what);
  job.status = std::move(*status);
  return job;
}

json TrainingJobSpecToJson(const TrainingJobSpec& spec) {
  json replicas = json::object();
  SetIfPresent(replicas, "min", spec.replicas.min);
  SetIfPresent(replicas, "max", spec.replicas.max);
  SetIfPresent(replicas, "desired", spec.replicas.desired);
  SetIfPresent(replicas, "multipleOf", spec.replicas.multiple_of);
  SetIfPresent(replicas, "spares", spec.replicas.spares);
  json j = {{"replicas", replicas}};
  SetIfPresent(j, "processesPerPod", spec.processes_per_pod);
  if (!spec.pod_template.is_null()) j["template"] = spec.pod_template;
  json checkpoint = json::object();
  SetIfNotEmpty(checkpoint, "volumeName", spec.checkpoint.volume_name);
  SetIfNotEmpty(checkpoint, "path", spec.checkpoint.path);
  SetIfPresent(checkpoint, "keep", spec.checkpoint.keep);
  if (!checkpoint.empty()) j["checkpoint"] = checkpoint;
  json ep = json::object();
  SetIfPresent(ep, "joinBatchWindowSeconds", spec.elastic_policy.join_batch_window_seconds);
  SetIfPresent(ep, "nodeUnresponsiveSeconds", spec.elastic_policy.node_unresponsive_seconds);
  SetIfPresent(ep, "maxRestarts", spec.elastic_policy.max_restarts);
  SetIfPresent(ep, "forceDeleteGraceSeconds", spec.elastic_policy.force_delete_grace_seconds);
  SetIfPresent(ep, "leaveGraceSeconds", spec.elastic_policy.leave_grace_seconds);
  if (!ep.empty()) j["elasticPolicy"] = ep;
  json rp = json::object();
  if (spec.run_policy.suspend) rp["suspend"] = *spec.run_policy.suspend;
  SetIfPresent(rp, "ttlSecondsAfterFinished", spec.run_policy.ttl_seconds_after_finished);
  SetIfPresent(rp, "activeDeadlineSeconds", spec.run_policy.active_deadline_seconds);
  SetIfNotEmpty(rp, "cleanPodPolicy", spec.run_policy.clean_pod_policy);
  SetIfPresent(rp, "keepFailedPods", spec.run_policy.keep_failed_pods);
  if (!rp.empty()) j["runPolicy"] = rp;
  json scheduling = json::object();
  SetIfNotEmpty(scheduling, "priorityClassName", spec.scheduling.priority_class_name);
  SetIfNotEmpty(scheduling, "schedulerName", spec.scheduling.scheduler_name);
  SetIfPresent(scheduling, "scheduleTimeoutSeconds", spec.scheduling.schedule_timeout_seconds);
  if (spec.scheduling.gang) {
    json gang = json::object();
    SetIfPresent(gang, "timeoutSeconds", spec.scheduling.gang->timeout_seconds);
    scheduling["gang"] = gang;
  }
  if (!scheduling.empty()) j["scheduling"] = scheduling;
  json ports = json::object();
  SetIfPresent(ports, "rendezvous", spec.ports.rendezvous);
  SetIfPresent(ports, "metrics", spec.ports.metrics);
  if (!ports.empty()) j["ports"] = ports;
  return j;
}

json GoodputToJson(const Goodput& g) {
  const LostSeconds& l = g.lost_seconds;
  json j = {{"ratio", g.ratio},
            {"productiveSeconds", g.productive_seconds},
            {"wallSeconds", g.wall_seconds},
            {"asOf", g.as_of},
            {"accountedGeneration", g.accounted_generation},
            {"lostSeconds",
             {{"detect", l.detect},
              {"reschedule", l.reschedule},
              {"rebuild", l.rebuild},
              {"restore", l.restore},
              {"replay", l.replay},
              {"hung", l.hung}}},
            {"failures", g.failures}};
  if (g.last_recovery_seconds) j["lastRecoverySeconds"] = *g.last_recovery_seconds;
  SetIfNotEmpty(j, "recoveringSince", g.recovering_since);
  return j;
}

json TrainingJobStatusToJson(const TrainingJobStatus& s) {
  json conditions = json::array();
  for (const auto& c : s.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", c.status},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", c.last_transition_time},
                          {"observedGeneration", c.observed_generation}});
  }
  json failures = json::array();
  for (const auto& f : s.recent_failures) {
    json failure = {{"pod", f.pod}, {"uid", f.uid}, {"exitCode", f.exit_code}, {"reason", f.reason}, {"time", f.time}};
    if (f.ran_seconds >= 0) failure["ranSeconds"] = f.ran_seconds;
    if (!f.node.empty()) failure["node"] = f.node;
    if (!f.gpu.empty()) failure["gpu"] = f.gpu;
    if (!f.message.empty()) failure["message"] = f.message;
    failures.push_back(std::move(failure));
  }
  json j = {{"observedGeneration", s.observed_generation},
            {"phase", s.phase},
            {"selector", s.selector},
            {"conditions", conditions},
            {"restartCount", s.restart_count},
            {"recentFailures", failures}};
  if (s.replicas) {
    j["replicas"] = {{"desired", s.replicas->desired}, {"active", s.replicas->active}, {"ready", s.replicas->ready},
                     {"pending", s.replicas->pending}, {"failed", s.replicas->failed}, {"spares", s.replicas->spares}};
  }
  if (!s.leaving.empty()) {
    json leaving = json::array();
    for (const auto& l : s.leaving) leaving.push_back({{"pod", l.pod}, {"uid", l.uid}, {"since", l.since}});
    j["leaving"] = leaving;
  }
  SetIfNotEmpty(j, "startTime", s.start_time);
  SetIfNotEmpty(j, "completionTime", s.completion_time);
  if (s.membership) j["membership"] = MembershipToJson(*s.membership);
  if (s.goodput) j["goodput"] = GoodputToJson(*s.goodput);
  if (s.hangs > 0) j["hangs"] = s.hangs;
  return j;
}

json TrainingJobToJson(const TrainingJob& job) {
  json meta = {{"name", job.metadata.name}};
  SetIfNotEmpty(meta, "namespace", job.metadata.ns);
  SetIfNotEmpty(meta, "uid", job.metadata.uid);
  if (job.metadata.generation != 0) meta["generation"] = job.metadata.generation;
  SetIfNotEmpty(meta, "deletionTimestamp", job.metadata.deletion_timestamp);
  return {{"apiVersion", kApiVersion},
          {"kind", kKind},
          {"metadata", meta},
          {"spec", TrainingJobSpecToJson(job.spec)},
          {"status", TrainingJobStatusToJson(job.status)}};
}

}  // namespace ringmaster::api
