// The TrainingJob API types (crds/ringmaster.io_trainingjobs.yaml is their schema) and their JSON mapping,
// in one place. The types carry what the object says: optional fields stay unset when absent (the
// controller applies its defaults, operator/controller/job_spec.h), so decoding and encoding round-trip.
//
// Errors: DecodeTrainingJob never throws. A field of the wrong type, or a value out of range for its
// type, is InvalidArgument naming the object and the field path, e.g.
//   "TrainingJob default/bert: spec.replicas.min: expected integer, got string".
// Semantic rules (min <= max, ...) are not checked here: the CRD's validation and the controller do that.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/membership.h"
#include "base/status.h"

namespace ringmaster::api {

struct ObjectMeta {
  std::string name;
  std::string ns;  // metadata.namespace
  std::string uid;
  int64_t generation = 0;
  std::string deletion_timestamp;  // RFC 3339; empty unless the object is being deleted

  bool operator==(const ObjectMeta&) const = default;
};

struct ReplicaSpec {
  std::optional<int64_t> min, max;  // elastic bounds, in workers
  std::optional<int64_t> desired;   // driven by the scale subresource; the controller defaults it to max
  // The world-size granularity (a device mesh's tp group, say): min, max, desired and every published
  // world size are multiples of it. The controller defaults it to 1.
  std::optional<int64_t> multiple_of;
  // Warm spares: workers kept started and Ready beyond `desired`, outside the membership, so that a lost
  // member's place is taken without scheduling, pulling or starting a pod. The controller defaults it to 0.
  std::optional<int64_t> spares;
  bool operator==(const ReplicaSpec&) const = default;
};

struct CheckpointSpec {
  std::string volume_name;
  std::string path;  // where workers save (RINGMASTER_CHECKPOINT_DIR)
  std::optional<int64_t> keep;
  bool operator==(const CheckpointSpec&) const = default;
};

struct ElasticPolicy {
  std::optional<int64_t> join_batch_window_seconds;
  std::optional<int64_t> node_unresponsive_seconds;
  std::optional<int64_t> max_restarts;
  std::optional<int64_t> force_delete_grace_seconds;
  std::optional<int64_t> leave_grace_seconds;
  bool operator==(const ElasticPolicy&) const = default;
};

// spec.runPolicy.cleanPodPolicy's values: which worker pods a finished job deletes.
namespace clean_pod_policy {
inline constexpr std::string_view kAll = "All";
inline constexpr std::string_view kRunning = "Running";  // the default: those still running (or pending)
inline constexpr std::string_view kNone = "None";
}  // namespace clean_pod_policy

struct RunPolicy {
  std::optional<bool> suspend;
  std::optional<int64_t> ttl_seconds_after_finished;
  std::optional<int64_t> active_deadline_seconds;
  std::string clean_pod_policy;  // clean_pod_policy::k*; empty when absent
  // How many failed worker pods are kept (the newest), so `kubectl logs` can still read them; their
  // replacements take new names. The controller defaults it to 3.
  std::optional<int64_t> keep_failed_pods;
  bool operator==(const RunPolicy&) const = default;
};

// spec.scheduling.gang: gang scheduling at the scheduler (the scheduler-plugins Coscheduling plugin). The operator
// creates a PodGroup named after the job (minMember = spec.replicas.min pods) and names it on every worker pod.
struct GangScheduling {
  // How long the scheduler keeps the resources it reserved for a group that cannot be completed.
  std::optional<int64_t> timeout_seconds;
  bool operator==(const GangScheduling&) const = default;
};

struct Scheduling {
  std::string priority_class_name;
  std::string scheduler_name;
  // How long the job may have fewer Ready workers than spec.replicas.min before it fails (and its pods,
  // with the GPUs they hold, are deleted); unset: it waits as long as it takes.
  std::optional<int64_t> schedule_timeout_seconds;
  std::optional<GangScheduling> gang;
  bool operator==(const Scheduling&) const = default;
};

// spec.ports: the ports a job's workers listen on (process i of a pod takes base + i of each). Per job, so that
// jobs whose pods share a node's network (hostNetwork) do not collide. The controller defaults them to
// kCoordinatorPort and kWorkerHealthPort (api/names.h).
struct Ports {
  std::optional<int64_t> rendezvous;  // the rendezvous store, served by rank 0
  std::optional<int64_t> metrics;     // the runtime's /metrics, /healthz and /readyz
  bool operator==(const Ports&) const = default;
};

struct TrainingJobSpec {
  ReplicaSpec replicas;
  // Ranks per worker pod (spec.processesPerPod); unset: the pod's GPU limit, 1 without GPUs (the
  // controller resolves it, operator/controller/job_spec.h).
  std::optional<int64_t> processes_per_pod;
  nlohmann::json pod_template;  // spec.template, a PodTemplateSpec (null when absent)
  CheckpointSpec checkpoint;
  ElasticPolicy elastic_policy;
  RunPolicy run_policy;
  Scheduling scheduling;
  Ports ports;
  bool operator==(const TrainingJobSpec&) const = default;
};

struct Condition {
  std::string type, status, reason, message;
  std::string last_transition_time;  // RFC 3339
  int64_t observed_generation = 0;
  bool operator==(const Condition&) const = default;
};

struct ReplicaCounts {
  int32_t desired = 0, active = 0, ready = 0, pending = 0, failed = 0;
  int32_t spares = 0;  // Ready workers outside the membership, waiting to take a lost member's place
  bool operator==(const ReplicaCounts&) const = default;
};

// How much of a failed worker's termination message status.recentFailures[].message keeps.
inline constexpr size_t kFailureMessageKept = 1024;

// A worker failure already counted toward restartCount (remembered by pod uid).
struct FailureRecord {
  std::string pod, uid;
  int32_t exit_code = 0;
  std::string reason;
  std::string time;  // RFC 3339
  // How long its container ran before it failed, in whole seconds; -1 when the kubelet did not say. A worker
  // that ran for minutes before it failed is no crash loop: only short runs lengthen the replacement backoff.
  int64_t ran_seconds = -1;
  // Where it failed and why, from its termination message (api/worker_termination.h): its node (the pod's),
  // the GPU it named ("2 (GPU-...)"; empty: none named) and the message (empty: none; cut to
  // kFailureMessageKept bytes).
  std::string node{}, gpu{}, message{};  // (initialized: a brace list may leave them out)
  bool operator==(const FailureRecord&) const = default;
};

// A worker dropped from membership by a scale-down that has not exited yet.
struct LeavingWorker {
  std::string pod, uid;
  std::string since;  // RFC 3339
  bool operator==(const LeavingWorker&) const = default;
};

// status.goodput: what failures and membership changes cost the job (operator/controller/goodput.h defines
// every figure and how it is accounted). Seconds are wall-clock seconds of the full desired world.
struct LostSeconds {
  double detect = 0, reschedule = 0, rebuild = 0, restore = 0, replay = 0;
  double hung = 0;  // generations that hung (reason Hung): from their last step progress to the next generation
  bool operator==(const LostSeconds&) const = default;
};

struct Goodput {
  double ratio = 0;  // productive_seconds / wall_seconds
  double productive_seconds = 0, wall_seconds = 0;
  std::string as_of;                 // RFC 3339 (milliseconds): the figures are as of then
  int64_t accounted_generation = 0;  // the newest generation whose progress report is accounted
  LostSeconds lost_seconds;
  int64_t failures = 0;
  std::optional<double> last_recovery_seconds;  // unset until a recovery completed
  std::string recovering_since;  // RFC 3339: a failure whose recovery is under way happened then; empty if none
  bool operator==(const Goodput&) const = default;
};

struct TrainingJobStatus {
  int64_t observed_generation = 0;
  std::string phase;  // Pending | Running | Suspended | Succeeded | Failed; empty before the first reconcile
  std::string selector;
  std::vector<Condition> conditions;
  std::optional<ReplicaCounts> replicas;
  int32_t restart_count = 0;
  std::vector<FailureRecord> recent_failures;
  std::vector<LeavingWorker> leaving;
  std::string start_time, completion_time;  // RFC 3339; empty when not yet
  std::optional<Membership> membership;     // set once a generation was published
  std::optional<Goodput> goodput;           // set once a generation was published (goodput.h)
  // Generations published because a member reported its generation hung (reason Hung, api/hang_report.h).
  int32_t hangs = 0;
  bool operator==(const TrainingJobStatus&) const = default;
};

struct TrainingJob {
  ObjectMeta metadata;
  TrainingJobSpec spec;
  TrainingJobStatus status;
  bool operator==(const TrainingJob&) const = default;
};

// "TrainingJob <namespace>/<name>" (or without the namespace when it has none): the prefix of errors.
std::string Describe(const ObjectMeta& meta);

StatusOr<TrainingJob> DecodeTrainingJob(const nlohmann::json& j);
// The parts on their own; errors name the field from the object's root ("spec.replicas.min") without the
// object prefix.
StatusOr<TrainingJobSpec> DecodeTrainingJobSpec(const nlohmann::json& spec);
StatusOr<TrainingJobStatus> DecodeTrainingJobStatus(const nlohmann::json& status);

// The object with apiVersion and kind; absent optional fields are left out.
nlohmann::json TrainingJobToJson(const TrainingJob& job);
nlohmann::json TrainingJobSpecToJson(const TrainingJobSpec& spec);
// The .status document the operator writes: phase, selector, observedGeneration, conditions, restartCount
// and recentFailures always; replicas, leaving (non-empty), startTime, completionTime, membership and goodput when
// set.
nlohmann::json TrainingJobStatusToJson(const TrainingJobStatus& status);
// status.goodput: every figure always (lostSeconds with its five phases); lastRecoverySeconds and recoveringSince
// when set.
nlohmann::json GoodputToJson(const Goodput& goodput);

}  // namespace ringmaster::api
