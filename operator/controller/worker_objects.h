// The Kubernetes objects the operator owns for a TrainingJob, built from the job alone: worker pods,
// the headless Service, the per-job ServiceAccount/Role/RoleBinding that let workers read their own
// job (and nothing else), the per-job Secret the workers authenticate to each other with, and the
// per-job NetworkPolicy that keeps other pods off the workers' store and collective ports.
// Pure functions over JSON; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/names.h"
#include "base/status.h"

namespace ringmaster::controller {

// The job label, worker-index label, created-for annotation (and its values, api::created_for) and the
// ports are the contract's (api/names.h).
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedByValue[] = "ringmaster";

std::string WorkerPodName(const std::string& job, int32_t index);  // "<job>-worker-<index>"
std::string HeadlessServiceName(const std::string& job);           // "<job>-workers"
std::string WorkerServiceAccountName(const std::string& job);      // "<job>-worker"
std::string WorkerRoleName(const std::string& job);                // "<job>-worker"
std::string WorkerSecretName(const std::string& job);              // "<job>-worker-secret"
std::string WorkerNetworkPolicyName(const std::string& job);       // "<job>-workers"
// The key in that Secret whose value workers get as their secret (api::WorkerEnv::secret).
inline constexpr char kJobSecretKey[] = "secret";
// The worker index encoded in a pod's label; nullopt when absent or malformed.
std::optional<int32_t> WorkerIndexOf(const nlohmann::json& pod);
// The label selector that picks this job's workers ("ringmaster.io/job-name=<job>").
std::string WorkerSelector(const std::string& job);

// A worker pod for `job` (a TrainingJob object) at `index`: the template's spec with restartPolicy
// Never, hostname/subdomain for the headless Service, the pod's identity in its environment (downward
// API), the job secret (RINGMASTER_SECRET, from the per-job Secret), the minimum world in ranks
// (RINGMASTER_MIN_WORKERS: spec.replicas.min times processes) and spec.replicas.multipleOf
// (RINGMASTER_REPLICAS_MULTIPLE_OF), a readiness probe on the runtime's /readyz when the template has
// none, and an owner reference to the job.
//
// `processes` ranks per pod (JobSpec::processes_per_pod): above 1 the first container's command becomes
// `ringmaster-launch --processes N -- <command>` (kLaunchCommand; it gives each process its worker id,
// ports and GPU) and the pod gets a memory-backed /dev/shm for NCCL's intra-pod transport unless the
// template mounts one.
//
// InvalidArgument when the job lacks metadata.name/uid or spec.template.spec, when its checkpoint volume
// does not exist, or when processes > 1 and the first container has no command to wrap.
StatusOr<nlohmann::json> BuildWorkerPod(const nlohmann::json& job, int32_t index, int32_t processes);

// The program that starts a pod's processes (worker-runtime/tools/launch), on the worker image's PATH.
inline constexpr char kLaunchCommand[] = "ringmaster-launch";
// The memory-backed /dev/shm of a pod with several processes: this much per process (NCCL's shared-memory
// transport keeps its buffers there; Docker's default of 64 MiB is far too small).
inline constexpr int32_t kShmMiBPerProcess = 1024;

// The headless Service that gives workers stable DNS names.
StatusOr<nlohmann::json> BuildHeadlessService(const nlohmann::json& job);

// ServiceAccount (only when the template names none), Role (get/list/watch on this one TrainingJob by
// name; get/patch on its peer-reports ConfigMap by name) and RoleBinding to the template's service
// account or the per-job one.
StatusOr<nlohmann::json> BuildWorkerServiceAccount(const nlohmann::json& job);
StatusOr<nlohmann::json> BuildWorkerRole(const nlohmann::json& job);
StatusOr<nlohmann::json> BuildWorkerRoleBinding(const nlohmann::json& job);
// The job's peer-reports ConfigMap (api/peer_report.h), empty, owned by the job, labelled
// api::kPeerReportsLabel. InvalidArgument for a job without name/uid.
StatusOr<nlohmann::json> BuildPeerReports(const nlohmann::json& job);
// The per-job Secret (Opaque, immutable, owned by the job) holding `secret` (job_secret.h,
// NewJobSecret) under kJobSecretKey. InvalidArgument for an empty secret or a job without name/uid.
StatusOr<nlohmann::json> BuildWorkerSecret(const nlohmann::json& job, const std::string& secret);
// The per-job NetworkPolicy (owned by the job) over the job's worker pods (WorkerSelector): ingress on
// every port only from pods of the same job in the same namespace — the rendezvous store
// (api::kCoordinatorPort) and the collective transports, whose ports are dynamic — plus ingress from any
// source on api::kWorkerHealthPort, which serves only /metrics, /healthz and /readyz (Prometheus scrapes
// it; the kubelet probes it, and neither is necessarily a pod a selector could name). Egress is left
// alone: workers reach the apiserver, storage and registries at addresses the operator cannot know.
// Enforced only where the cluster's network plugin implements NetworkPolicy. InvalidArgument for a job
// without name/uid.
StatusOr<nlohmann::json> BuildWorkerNetworkPolicy(const nlohmann::json& job);
// The service account workers run as: the template's, or the per-job one.
std::string WorkerServiceAccountFor(const nlohmann::json& job);

// Gang scheduling (spec.scheduling.gang): kubernetes-sigs/scheduler-plugins' Coscheduling plugin, v0.34.
inline constexpr char kPodGroupLabel[] = "scheduling.x-k8s.io/pod-group";    // on each worker pod: its PodGroup
inline constexpr char kGangSchedulerName[] = "scheduler-plugins-scheduler";  // when spec.scheduling names none
inline constexpr int64_t kGangTimeoutSeconds = 60;                           // the CRD's default
// Whether the job asks for gang scheduling.
bool WantsGang(const nlohmann::json& job);
// The job's PodGroup (scheduling.x-k8s.io/v1alpha1, named after the job): minMember = spec.replicas.min pods,
// scheduleTimeoutSeconds = spec.scheduling.gang.timeoutSeconds; an intent for server-side apply. InvalidArgument
// for a job without name/uid.
StatusOr<nlohmann::json> BuildPodGroup(const nlohmann::json& job);

}  // namespace ringmaster::controller
