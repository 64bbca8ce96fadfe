// The names both sides of the contract agree on: the TrainingJob's group/version/resource, the labels and
// annotations the operator puts on what it creates, the ports a worker listens on, and the environment
// variables a worker pod is given. Nothing outside api/ spells these as literals (docs, YAML and the chart
// excepted); change one here and both the operator and the runtime follow.
//
// Thread-safety: constants only.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringmaster::api {

// The TrainingJob API (crds/ringmaster.io_trainingjobs.yaml is its schema).
inline constexpr std::string_view kGroup = "ringmaster.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "ringmaster.io/v1alpha1";
inline constexpr std::string_view kKind = "TrainingJob";
inline constexpr std::string_view kResource = "trainingjobs";  // plural
inline constexpr std::string_view kShortName = "tj";
inline constexpr std::string_view kCrdName = "trainingjobs.ringmaster.io";            // <plural>.<group>
inline constexpr std::string_view kCrdFile = "crds/ringmaster.io_trainingjobs.yaml";  // from the repository root

// Labels and annotations on the objects the operator creates for a job.
inline constexpr std::string_view kJobNameLabel = "ringmaster.io/job-name";          // every object of a job
inline constexpr std::string_view kWorkerIndexLabel = "ringmaster.io/worker-index";  // a worker pod's index
inline constexpr std::string_view kCreatedForAnnotation = "ringmaster.io/created-for";
// Its values: why the operator created a worker pod.
namespace created_for {
inline constexpr std::string_view kStart = "Start";              // for the job's first membership
inline constexpr std::string_view kReplacement = "Replacement";  // in place of a worker that left
inline constexpr std::string_view kScaleUp = "ScaleUp";          // the desired count rose (it joins as ScaledUp)
}  // namespace created_for
// On a job's peer-reports ConfigMap (api/peer_report.h), so the operator watches only those.
inline constexpr std::string_view kPeerReportsLabel = "ringmaster.io/peer-reports";

// Ports a worker listens on by default (a job's spec.ports sets its own); process i of a pod takes base + i.
inline constexpr int32_t kCoordinatorPort = 29500;  // the rendezvous store, served by rank 0
// The runtime's /metrics, /healthz and /readyz. Not 9400 (dcgm-exporter's, on every GPU node) nor another
// exporter's 9xxx port: with hostNetwork a worker shares its node's ports with them.
inline constexpr int32_t kWorkerHealthPort = 29600;
// A pod's processes take consecutive ports from each base: the two ranges must not overlap (kMaxProcessesPerPod).
inline constexpr int32_t kPortsPerPod = 64;
inline constexpr std::string_view kWorkerMetricsPortName = "metrics";

// The environment of a worker. In a pod the operator sets these (WorkerEnv::ToPodEnv); under ringmaster-run
// the launcher does. A worker reads them once, at start (WorkerEnv::FromEnvironment).
namespace env {
// Who and where the worker is (downward API in a pod).
inline constexpr std::string_view kJobName = "RINGMASTER_JOB_NAME";
inline constexpr std::string_view kJobNamespace = "RINGMASTER_JOB_NAMESPACE";
inline constexpr std::string_view kPodName = "RINGMASTER_POD_NAME";
inline constexpr std::string_view kPodUid = "RINGMASTER_POD_UID";
inline constexpr std::string_view kPodIp = "RINGMASTER_POD_IP";
inline constexpr std::string_view kNodeName = "RINGMASTER_NODE_NAME";
inline constexpr std::string_view kWorkerIndex = "RINGMASTER_WORKER_INDEX";
inline constexpr std::string_view kWorkerId = "RINGMASTER_WORKER_ID";
// The job: rendezvous, bounds, checkpoints.
inline constexpr std::string_view kSecret = "RINGMASTER_SECRET";
inline constexpr std::string_view kMinWorkers = "RINGMASTER_MIN_WORKERS";
// spec.replicas.multipleOf: every world the operator publishes is a multiple of it.
inline constexpr std::string_view kReplicasMultipleOf = "RINGMASTER_REPLICAS_MULTIPLE_OF";
inline constexpr std::string_view kCoordinatorPort = "RINGMASTER_COORDINATOR_PORT";
inline constexpr std::string_view kStorePort = "RINGMASTER_STORE_PORT";
inline constexpr std::string_view kHealthPort = "RINGMASTER_HEALTH_PORT";
inline constexpr std::string_view kCheckpointDir = "RINGMASTER_CHECKPOINT_DIR";
// spec.checkpoint.keep: how many complete checkpoints the workers keep (default 3).
inline constexpr std::string_view kCheckpointKeep = "RINGMASTER_CHECKPOINT_KEEP";
// The local launcher's (ringmaster-run) side channel.
inline constexpr std::string_view kMembershipFile = "RINGMASTER_MEMBERSHIP_FILE";
inline constexpr std::string_view kHeartbeatFile = "RINGMASTER_HEARTBEAT_FILE";
inline constexpr std::string_view kOut = "RINGMASTER_OUT";
// The runtime's tuning (runtime::RuntimeConfig).
inline constexpr std::string_view kBackend = "RINGMASTER_BACKEND";
inline constexpr std::string_view kCollectiveTimeoutMs = "RINGMASTER_COLLECTIVE_TIMEOUT_MS";
inline constexpr std::string_view kFusionThresholdBytes = "RINGMASTER_FUSION_THRESHOLD_BYTES";
inline constexpr std::string_view kCycleTimeMs = "RINGMASTER_CYCLE_TIME_MS";
inline constexpr std::string_view kTimeline = "RINGMASTER_TIMELINE";
inline constexpr std::string_view kProcessSets = "RINGMASTER_PROCESS_SETS";
// The CUDA device (an index among the visible GPUs) a worker process runs NCCL on, for its whole life:
// set by whatever starts several ranks on one host (ringmaster-run, a pod's entrypoint).
inline constexpr std::string_view kDevice = "RINGMASTER_DEVICE";
// The hang watchdog (worker-runtime/elastic/hang_watchdog.h): a member that commits no step for FACTOR x the recent
// median step (0 turns it off; default 10), and for at least MIN_SECONDS (default 30), revokes its generation.
inline constexpr std::string_view kHangFactor = "RINGMASTER_HANG_FACTOR";
inline constexpr std::string_view kHangMinSeconds = "RINGMASTER_HANG_MIN_SECONDS";
// Where a worker that cannot go on writes its termination message (worker_termination.h); unset: the
// container's kDefaultTerminationLogPath. ringmaster-run gives each worker a file of its own; tests set it.
inline constexpr std::string_view kTerminationLog = "RINGMASTER_TERMINATION_LOG";
}  // namespace env

}  // namespace ringmaster::api
