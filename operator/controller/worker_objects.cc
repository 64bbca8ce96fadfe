#include "operator/controller/worker_objects.h"

#include <charconv>

#include "api/peer_report.h"
#include "api/worker_env.h"
#include "base/json_path.h"
#include "kube/base64.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

struct JobIdentity {
  std::string name, ns, uid;
};

StatusOr<JobIdentity> Identify(const json& job) {
  JobIdentity id{StringAt(job, {"metadata", "name"}), StringAt(job, {"metadata", "namespace"}),
                 StringAt(job, {"metadata", "uid"})};
  if (id.name.empty() || id.uid.empty()) {
    return InvalidArgumentError("TrainingJob object lacks metadata.name or metadata.uid");
  }
  return id;
}

json OwnerReference(const JobIdentity& id) {
  return json::array({{{"apiVersion", api::kApiVersion},
                       {"kind", api::kKind},
                       {"name", id.name},
                       {"uid", id.uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

json OwnedMetadata(const JobIdentity& id, const std::string& name) {
  return {{"name", name},
          {"namespace", id.ns},
          {"labels", {{api::kJobNameLabel, id.name}, {kManagedByLabel, kManagedByValue}}},
          {"ownerReferences", OwnerReference(id)}};
}

// Appends `vars` to a container's env, leaving any variable the template already sets alone.
void AddEnv(json& container, const json& vars) {
  if (!container.contains("env") || !container["env"].is_array()) container["env"] = json::array();
  for (const auto& v : vars) {
    bool present = false;
    for (const auto& e : container["env"]) present |= StringAt(e, {"name"}) == StringAt(v, {"name"});
    if (!present) container["env"].push_back(v);
  }
}

// Whether any container asks for NVIDIA GPUs (the nvidia-device-plugin's resource).
bool WantsGpus(const json& pod_spec) {
  for (const auto& c : ArrayAt(pod_spec, {"containers"})) {
    const json& gpus = At(c, {"resources", "limits", "nvidia.com/gpu"});
    if ((gpus.is_number_integer() && gpus.get<int64_t>() > 0) ||
        (gpus.is_string() && !gpus.get<std::string>().empty() && gpus.get<std::string>() != "0")) {
      return true;
    }
  }
  return false;
}

// Mounts the checkpoint volume at the checkpoint path in every container that mounts nothing there.
// Errors: InvalidArgument when the template has no such volume (the CRD refuses that; this guards
// objects stored before it did).
Status MountCheckpoints(const json& checkpoint, json& pod_spec, const std::string& job) {
  const std::string volume = StringAt(checkpoint, {"volumeName"}), path = StringAt(checkpoint, {"path"});
  if (volume.empty() || path.empty()) return Status::Ok();
  bool found = false;
  for (const auto& v : ArrayAt(pod_spec, {"volumes"})) found = found || StringAt(v, {"name"}) == volume;
  if (!found) {
    return InvalidArgumentError("TrainingJob " + job + ": spec.checkpoint.volumeName '" + volume +
                                "' names no volume of spec.template.spec.volumes");
  }
  for (auto& c : pod_spec["containers"]) {
    bool mounted = false;
    for (const auto& m : ArrayAt(c, {"volumeMounts"})) mounted = mounted || StringAt(m, {"mountPath"}) == path;
    if (!mounted) c["volumeMounts"].push_back({{"name", volume}, {"mountPath", path}});
  }
  return Status::Ok();
}

// Several processes in one pod: the first container's command runs under ringmaster-launch, and a
// memory-backed /dev/shm is mounted in it (unless the template has its own). InvalidArgument when the
// container has no command (the image's entrypoint cannot be wrapped without knowing it).
Status LaunchProcesses(json& pod_spec, int32_t processes, const std::string& job) {
  json& main = pod_spec["containers"][0];
  const json& command = At(main, {"command"});
  if (!command.is_array() || command.empty()) {
    return InvalidArgumentError(
        "TrainingJob " + job + ": spec.processesPerPod is " + std::to_string(processes) +
        ", which needs spec.template.spec.containers[0].command (the command is started once per "
        "rank by " +
        kLaunchCommand +
        "; an image's entrypoint cannot be wrapped): set command, "
        "or set processesPerPod: 1");
  }
  json wrapped = json::array({kLaunchCommand, "--processes", std::to_string(processes), "--"});
  for (const auto& arg : command) wrapped.push_back(arg);
  main["command"] = wrapped;
  for (const auto& m : ArrayAt(main, {"volumeMounts"})) {
    if (StringAt(m, {"mountPath"}) == "/dev/shm") return Status::Ok();
  }
  const std::string volume = "ringmaster-shm";
  pod_spec["volumes"].push_back(
      {{"name", volume},
       {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", std::to_string(kShmMiBPerProcess * processes) + "Mi"}}}});
  main["volumeMounts"].push_back({{"name", volume}, {"mountPath", "/dev/shm"}});
  return Status::Ok();
}

// spec.ports' rendezvous or metrics port, or the default when unset (ParseJobSpec checks the values).
int32_t RendezvousPortOf(const json& job) {
  const json& port = At(job, {"spec", "ports", "rendezvous"});
  return port.is_number_integer() ? port.get<int32_t>() : api::kCoordinatorPort;
}
int32_t MetricsPortOf(const json& job) {
  const json& port = At(job, {"spec", "ports", "metrics"});
  return port.is_number_integer() ? port.get<int32_t>() : api::kWorkerHealthPort;
}

}  // namespace

std::string WorkerPodName(const std::string& job, int32_t index) { return job + "-worker-" + std::to_string(index); }
std::string HeadlessServiceName(const std::string& job) { return job + "-workers"; }
std::string WorkerServiceAccountName(const std::string& job) { return job + "-worker"; }
std::string WorkerRoleName(const std::string& job) { return job + "-worker"; }
std::string WorkerSecretName(const std::string& job) { return job + "-worker-secret"; }
std::string WorkerNetworkPolicyName(const std::string& job) { return job + "-workers"; }
std::string WorkerSelector(const std::string& job) { return std::string(api::kJobNameLabel) + "=" + job; }

std::optional<int32_t> WorkerIndexOf(const json& pod) {
  std::string s = StringAt(pod, {"metadata", "labels", api::kWorkerIndexLabel});
  int32_t index = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), index);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || index < 0) return std::nullopt;
  return index;
}

std::string WorkerServiceAccountFor(const json& job) {
  std::string named = StringAt(job, {"spec", "template", "spec", "serviceAccountName"});
  return named.empty() ? WorkerServiceAccountName(StringAt(job, {"metadata", "name"})) : named;
}

StatusOr<json> BuildWorkerPod(const json& job, int32_t index, int32_t processes) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  const json& tmpl = At(job, {"spec", "template"});
  if (!At(tmpl, {"spec"}).is_object() || !At(tmpl, {"spec", "containers"}).is_array() ||
      At(tmpl, {"spec", "containers"}).empty()) {
    return InvalidArgumentError("TrainingJob " + id.name + " has no spec.template.spec.containers");
  }
  const std::string name = WorkerPodName(id.name, index);
  const int32_t metrics_port = MetricsPortOf(job);
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", OwnedMetadata(id, name)}, {"spec", tmpl["spec"]}};
  json& meta = pod["metadata"];
  if (At(tmpl, {"metadata", "labels"}).is_object()) {
    json labels = tmpl["metadata"]["labels"];
    labels.update(meta["labels"]);  // ours win
    meta["labels"] = labels;
  }
  meta["labels"][api::kWorkerIndexLabel] = std::to_string(index);
  if (At(tmpl, {"metadata", "annotations"}).is_object()) meta["annotations"] = tmpl["metadata"]["annotations"];
  // For a Prometheus without the Prometheus Operator (its kubernetes_sd pod role); the template's own win.
  for (const auto& [key, value] : {std::pair<const char*, std::string>{"prometheus.io/scrape", "true"},
                                   {"prometheus.io/port", std::to_string(metrics_port)},
                                   {"prometheus.io/path", "/metrics"}}) {
    if (!meta["annotations"].contains(key)) meta["annotations"][key] = value;
  }

  json& spec = pod["spec"];
  spec["restartPolicy"] = "Never";  // a failed worker is replaced by the operator, never restarted in place
  spec["hostname"] = name;
  spec["subdomain"] = HeadlessServiceName(id.name);
  spec["serviceAccountName"] = WorkerServiceAccountFor(job);
  spec["automountServiceAccountToken"] = true;  // workers watch their own job with this token
  if (std::string s = StringAt(job, {"spec", "scheduling", "schedulerName"}); !s.empty()) spec["schedulerName"] = s;
  if (WantsGang(job)) {  // the Coscheduling plugin finds the pod's group by this label
    meta["labels"][kPodGroupLabel] = id.name;
    if (!spec.contains("schedulerName")) spec["schedulerName"] = kGangSchedulerName;
  }
  if (std::string s = StringAt(job, {"spec", "scheduling", "priorityClassName"}); !s.empty())
    spec["priorityClassName"] = s;

  api::WorkerEnv worker;
  worker.job_name = id.name;
  worker.worker_index = index;
  worker.coordinator_port = RendezvousPortOf(job);
  worker.health_port = metrics_port;
  // The runtime compares it with world sizes, which count ranks.
  if (const json& min = At(job, {"spec", "replicas", "min"}); min.is_number_integer()) {
    worker.min_workers = static_cast<int32_t>(min.get<int64_t>() * processes);
  }
  // The runtime checks its mesh rule against it (the CRD defaults it to 1).
  if (const json& m = At(job, {"spec", "replicas", "multipleOf"}); m.is_number_integer()) {
    worker.replicas_multiple_of = static_cast<int32_t>(m.get<int64_t>());
  }
  worker.checkpoint_dir = StringAt(job, {"spec", "checkpoint", "path"});
  if (const json& keep = At(job, {"spec", "checkpoint", "keep"}); keep.is_number_integer()) {
    worker.checkpoint_keep = static_cast<int32_t>(keep.get<int64_t>());
  }
  RINGMASTER_RETURN_IF_ERROR(MountCheckpoints(At(job, {"spec", "checkpoint"}), spec, id.name));
  // GPU workers train on NCCL: a GPU pod whose CUDA cannot see its GPUs then fails at its first
  // communicator, saying so, instead of training on the CPU (auto would fall back). A template that sets
  // RINGMASTER_BACKEND itself keeps its value (AddEnv).
  // One process per pod runs on the pod's first GPU; several get theirs from ringmaster-launch (process i
  // on GPU i).
  if (WantsGpus(spec)) {
    worker.backend = "nccl";
    if (processes == 1) worker.device = "0";
  }
  if (processes > 1) RINGMASTER_RETURN_IF_ERROR(LaunchProcesses(spec, processes, id.name));
  const json env = worker.ToPodEnv({WorkerSecretName(id.name), kJobSecretKey});
  for (auto& c : spec["containers"]) AddEnv(c, env);
  // Only initialized workers join: the runtime answers /readyz once it can take part in a generation.
  // A member that stops answering leaves the membership, which costs every worker a rebuild, so that
  // takes three failed probes: one slow answer under load, or a finished worker's last seconds of
  // teardown (its exit 0 completes the job only while it is still a member), must not do it. A crash is
  // seen sooner, by the pod's exit.
  json& main = spec["containers"][0];
  // The runtime's /metrics (and probes) port, named for the chart's PodMonitor, unless the template
  // already declares that port.
  bool declared = false;
  for (const auto& port : ArrayAt(main, {"ports"})) {
    declared = declared || StringAt(port, {"name"}) == api::kWorkerMetricsPortName ||
               IntAt(port, {"containerPort"}) == metrics_port;
  }
  if (!declared) {
    main["ports"].push_back(
        {{"name", api::kWorkerMetricsPortName}, {"containerPort", metrics_port}, {"protocol", "TCP"}});
  }
  // A worker that fails says why in its last lines (no GPU visible, a bad checkpoint): they become the
  // pod's termination message, shown by `kubectl describe pod`.
  if (!main.contains("terminationMessagePolicy")) main["terminationMessagePolicy"] = "FallbackToLogsOnError";
  if (!main.contains("readinessProbe")) {
    main["readinessProbe"] = {
        {"httpGet", {{"path", "/readyz"}, {"port", metrics_port}}}, {"periodSeconds", 2}, {"failureThreshold", 3}};
  }
  return pod;
}

StatusOr<json> BuildHeadlessService(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  json svc = {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", OwnedMetadata(id, HeadlessServiceName(id.name))}};
  svc["spec"] = {
      {"clusterIP", "None"},
      {"publishNotReadyAddresses", true},  // rank 0 is reachable while the world is being built
      {"selector", {{api::kJobNameLabel, id.name}}},
      {"ports", json::array({{{"name", "rendezvous"}, {"port", RendezvousPortOf(job)}, {"protocol", "TCP"}}})}};
  return svc;
}

StatusOr<json> BuildWorkerSecret(const json& job, const std::string& secret) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  if (secret.empty()) return InvalidArgumentError("the job secret of " + id.name + " is empty");
  return json{{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata", OwnedMetadata(id, WorkerSecretName(id.name))},
              {"type", "Opaque"},
              {"immutable", true},  // never rotated under a running job
              {"data", {{kJobSecretKey, kube::Base64Encode(secret)}}}};
}

StatusOr<json> BuildWorkerNetworkPolicy(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  const json this_job = {{"matchLabels", {{api::kJobNameLabel, id.name}}}};
  // A podSelector without a namespaceSelector means this namespace only: a pod elsewhere that copies
  // the label gets nothing. No ports on the first rule: every port, since Gloo and NCCL listen on
  // ports chosen at run time.
  json from_job = {{"from", json::array({{{"podSelector", this_job}}})}};
  json health = {{"ports", json::array({{{"protocol", "TCP"}, {"port", MetricsPortOf(job)}}})}};
  return json{{"apiVersion", "networking.k8s.io/v1"},
              {"kind", "NetworkPolicy"},
              {"metadata", OwnedMetadata(id, WorkerNetworkPolicyName(id.name))},
              {"spec",
               {{"podSelector", this_job},
                {"policyTypes", json::array({"Ingress"})},  // Ingress only: egress stays unrestricted
                {"ingress", json::array({from_job, health})}}}};
}

StatusOr<json> BuildWorkerServiceAccount(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  return json{{"apiVersion", "v1"},
              {"kind", "ServiceAccount"},
              {"metadata", OwnedMetadata(id, WorkerServiceAccountName(id.name))}};
}

StatusOr<json> BuildWorkerRole(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  return json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
              {"kind", "Role"},
              {"metadata", OwnedMetadata(id, WorkerRoleName(id.name))},
              {"rules", json::array({{{"apiGroups", {api::kGroup}},
                                      {"resources", {api::kResource}},
                                      {"resourceNames", {id.name}},
                                      {"verbs", {"get", "list", "watch"}}},
                                     // A worker replaces its own entry with a merge patch (peer_report.h).
                                     {{"apiGroups", {""}},
                                      {"resources", {"configmaps"}},
                                      {"resourceNames", {api::PeerReportsName(id.name)}},
                                      {"verbs", {"get", "patch"}}}})}};
}

StatusOr<json> BuildPeerReports(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  json cm = {
      {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", OwnedMetadata(id, api::PeerReportsName(id.name))}};
  cm["metadata"]["labels"][std::string(api::kPeerReportsLabel)] = "true";
  cm["data"] = json::object();
  return cm;
}

StatusOr<json> BuildWorkerRoleBinding(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  return json{
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata", OwnedMetadata(id, WorkerRoleName(id.name))},
      {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", WorkerRoleName(id.name)}}},
      {"subjects",
       json::array({{{"kind", "ServiceAccount"}, {"name", WorkerServiceAccountFor(job)}, {"namespace", id.ns}}})}};
}

bool WantsGang(const json& job) { return At(job, {"spec", "scheduling", "gang"}).is_object(); }

StatusOr<json> BuildPodGroup(const json& job) {
  RINGMASTER_ASSIGN_OR_RETURN(JobIdentity id, Identify(job));
  const int64_t timeout = IntAt(job, {"spec", "scheduling", "gang", "timeoutSeconds"}, kGangTimeoutSeconds);
  return json{
      {"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
      {"kind", "PodGroup"},
      {"metadata", OwnedMetadata(id, id.name)},
      {"spec", {{"minMember", IntAt(job, {"spec", "replicas", "min"}, 1)}, {"scheduleTimeoutSeconds", timeout}}}};
}

}  // namespace ringmaster::controller
