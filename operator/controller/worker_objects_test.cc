#include "operator/controller/worker_objects.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "kube/base64.h"
#include "operator/controller/job_secret.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

json Job() {
  json job = json::parse(R"({
    "metadata": {"name": "bert", "namespace": "research", "uid": "job-uid-1"},
    "spec": {
      "replicas": {"min": 2, "max": 4, "multipleOf": 2},
      "checkpoint": {"volumeName": "ckpt", "path": "/ckpt", "keep": 5},
      "scheduling": {"priorityClassName": "training"},
      "template": {
        "metadata": {"labels": {"team": "nlp"}},
        "spec": {"volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "bert-ckpt"}}],
                 "containers": [
          {"name": "trainer", "image": "t:1", "env": [],
           "resources": {"limits": {"nvidia.com/gpu": 2}}},
          {"name": "sidecar", "image": "s:1", "readinessProbe": {"exec": {"command": ["true"]}}}]}}}})");
  job["apiVersion"] = api::kApiVersion;
  job["kind"] = api::kKind;
  json& tmpl = job["spec"]["template"];
  tmpl["metadata"]["labels"][std::string(api::kJobNameLabel)] = "spoofed";
  tmpl["spec"]["containers"][0]["env"].push_back({{"name", api::env::kWorkerIndex}, {"value", "keep-mine"}});
  return job;
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const auto& e : container["env"])
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : e["valueFrom"].dump();
  return "<absent>";
}

// Prometheus finds the runtime's /metrics by the container port named "metrics" (the chart's PodMonitor)
// or by the prometheus.io annotations; the template's own annotation and port win.
TEST(WorkerObjectsTest, PodNamesTheMetricsPortAndCarriesScrapeAnnotations) {
  auto pod = BuildWorkerPod(Job(), 0, 1);
  ASSERT_OK(pod) << pod.status();
  const json& main = (*pod)["spec"]["containers"][0];
  EXPECT_EQ(main["ports"],
            json::array({{{"name", "metrics"}, {"containerPort", api::kWorkerHealthPort}, {"protocol", "TCP"}}}));
  EXPECT_FALSE((*pod)["spec"]["containers"][1].contains("ports"));  // the sidecar's own business
  const json& annotations = (*pod)["metadata"]["annotations"];
  EXPECT_EQ(annotations["prometheus.io/scrape"], "true");
  EXPECT_EQ(annotations["prometheus.io/port"], std::to_string(api::kWorkerHealthPort));
  EXPECT_EQ(annotations["prometheus.io/path"], "/metrics");

  json job = Job();
  job["spec"]["template"]["metadata"]["annotations"] = {{"prometheus.io/scrape", "false"}};
  job["spec"]["template"]["spec"]["containers"][0]["ports"] =
      json::array({{{"name", "metrics"}, {"containerPort", 9500}}});
  auto own = BuildWorkerPod(job, 0, 1);
  ASSERT_OK(own) << own.status();
  EXPECT_EQ((*own)["metadata"]["annotations"]["prometheus.io/scrape"], "false");
  EXPECT_EQ((*own)["spec"]["containers"][0]["ports"].size(), 1u);
  EXPECT_EQ((*own)["spec"]["containers"][0]["ports"][0]["containerPort"], 9500);
}

TEST(WorkerObjectsTest, PodCarriesIdentityOwnerAndGpuLimits) {
  auto pod = BuildWorkerPod(Job(), 3, 1);
  ASSERT_OK(pod) << pod.status();
  const json& p = *pod;
  EXPECT_EQ(p["metadata"]["name"], "bert-worker-3");
  EXPECT_EQ(p["metadata"]["namespace"], "research");
  EXPECT_EQ(p["metadata"]["labels"][std::string(api::kJobNameLabel)], "bert");  // ours win over the template's
  EXPECT_EQ(p["metadata"]["labels"][std::string(api::kWorkerIndexLabel)], "3");
  EXPECT_EQ(p["metadata"]["labels"]["team"], "nlp");
  EXPECT_EQ(WorkerIndexOf(p), 3);
  const json& owner = p["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["uid"], "job-uid-1");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(p["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(p["spec"]["subdomain"], "bert-workers");
  EXPECT_EQ(p["spec"]["serviceAccountName"], "bert-worker");
  EXPECT_EQ(p["spec"]["priorityClassName"], "training");
  const json& trainer = p["spec"]["containers"][0];
  EXPECT_EQ(trainer["resources"]["limits"]["nvidia.com/gpu"], 2);
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kJobName)), "bert");
  EXPECT_NE(EnvValue(trainer, std::string(api::env::kPodName)).find("metadata.name"), std::string::npos);
  EXPECT_NE(EnvValue(trainer, std::string(api::env::kPodIp)).find("status.podIP"), std::string::npos);
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kWorkerIndex)), "keep-mine");  // the template's own value stays
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kCheckpointDir)), "/ckpt");
  EXPECT_EQ(trainer["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(trainer["readinessProbe"]["failureThreshold"], 3);
  // A container with its own probe keeps it.
  EXPECT_TRUE(p["spec"]["containers"][1]["readinessProbe"].contains("exec"));
}

// spec.scheduling.gang: the pods name the job's PodGroup and go to the Coscheduling scheduler (unless the job names
// its own); the PodGroup asks for spec.replicas.min pods at once.
TEST(WorkerObjectsTest, AGangJobsPodsNameItsPodGroupWhichAsksForMinPods) {
  json job = Job();
  EXPECT_FALSE(WantsGang(job));
  auto plain = BuildWorkerPod(job, 0, 1);
  ASSERT_OK(plain);
  EXPECT_FALSE((*plain)["metadata"]["labels"].contains(kPodGroupLabel));
  EXPECT_FALSE((*plain)["spec"].contains("schedulerName"));

  job["spec"]["scheduling"]["gang"] = {{"timeoutSeconds", 45}};
  ASSERT_TRUE(WantsGang(job));
  auto pod = BuildWorkerPod(job, 1, 1);
  ASSERT_OK(pod);
  EXPECT_EQ((*pod)["metadata"]["labels"][kPodGroupLabel], "bert");
  EXPECT_EQ((*pod)["spec"]["schedulerName"], kGangSchedulerName);
  auto group = BuildPodGroup(job);
  ASSERT_OK(group);
  EXPECT_EQ((*group)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((*group)["metadata"]["name"], "bert");
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
  EXPECT_EQ((*group)["spec"]["minMember"], 2);
  EXPECT_EQ((*group)["spec"]["scheduleTimeoutSeconds"], 45);

  job["spec"]["scheduling"]["schedulerName"] = "my-coscheduler";
  job["spec"]["scheduling"]["gang"] = json::object();
  EXPECT_EQ((*BuildWorkerPod(job, 0, 1))["spec"]["schedulerName"], "my-coscheduler");
  EXPECT_EQ((*BuildPodGroup(job))["spec"]["scheduleTimeoutSeconds"], kGangTimeoutSeconds);
}

TEST(WorkerObjectsTest, TemplateServiceAccountIsUsedAndBound) {
  json job = Job();
  job["spec"]["template"]["spec"]["serviceAccountName"] = "team-sa";
  auto pod = BuildWorkerPod(job, 0, 1);
  ASSERT_OK(pod);
  EXPECT_EQ((*pod)["spec"]["serviceAccountName"], "team-sa");
  auto binding = BuildWorkerRoleBinding(job);
  ASSERT_OK(binding);
  EXPECT_EQ((*binding)["subjects"][0]["name"], "team-sa");
  EXPECT_EQ((*binding)["roleRef"]["name"], "bert-worker");
}

TEST(WorkerObjectsTest, RoleGrantsReadOnThisJobOnly) {
  auto role = BuildWorkerRole(Job());
  ASSERT_OK(role);
  const json& rule = (*role)["rules"][0];
  EXPECT_EQ(rule["resourceNames"], json::array({"bert"}));
  EXPECT_EQ(rule["verbs"], json::array({"get", "list", "watch"}));
  EXPECT_EQ(rule["resources"], json::array({api::kResource}));
  EXPECT_EQ(rule["apiGroups"], json::array({api::kGroup}));
  // ... and read/patch on its own peer-reports ConfigMap only (api/peer_report.h).
  const json& reports = (*role)["rules"][1];
  EXPECT_EQ(reports["resources"], json::array({"configmaps"}));
  EXPECT_EQ(reports["resourceNames"], json::array({"bert-peer-reports"}));
  EXPECT_EQ(reports["verbs"], json::array({"get", "patch"}));
  EXPECT_EQ((*role)["rules"].size(), 2u);
}

TEST(WorkerObjectsTest, PeerReportsStartEmptyOwnedByTheJobAndLabelledForTheOperatorsWatch) {
  auto cm = BuildPeerReports(Job());
  ASSERT_OK(cm);
  EXPECT_EQ((*cm)["metadata"]["name"], "bert-peer-reports");
  EXPECT_EQ((*cm)["metadata"]["labels"][std::string(api::kPeerReportsLabel)], "true");
  EXPECT_EQ((*cm)["metadata"]["labels"][std::string(api::kJobNameLabel)], "bert");
  EXPECT_EQ((*cm)["metadata"]["ownerReferences"][0]["kind"], api::kKind);
  EXPECT_TRUE((*cm)["data"].empty());
}

// spec.ports moves every place a port is named: the workers' environment, the metrics port, the probe, the
// scrape annotation, the headless Service and the NetworkPolicy's open port.
TEST(WorkerObjectsTest, TheJobsPortsReachEveryPlaceThatNamesThem) {
  json job = Job();
  job["spec"]["ports"] = {{"rendezvous", 31000}, {"metrics", 31100}};
  auto pod = BuildWorkerPod(job, 0, 1);
  ASSERT_OK(pod) << pod.status();
  const json& main = (*pod)["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(main, std::string(api::env::kCoordinatorPort)), "31000");
  EXPECT_EQ(EnvValue(main, std::string(api::env::kHealthPort)), "31100");
  EXPECT_EQ(main["ports"][0]["containerPort"], 31100);
  EXPECT_EQ(main["readinessProbe"]["httpGet"]["port"], 31100);
  EXPECT_EQ((*pod)["metadata"]["annotations"]["prometheus.io/port"], "31100");
  auto svc = BuildHeadlessService(job);
  ASSERT_OK(svc);
  EXPECT_EQ((*svc)["spec"]["ports"][0]["port"], 31000);
  auto policy = BuildWorkerNetworkPolicy(job);
  ASSERT_OK(policy);
  EXPECT_EQ((*policy)["spec"]["ingress"][1]["ports"][0]["port"], 31100);

  // Unset: the defaults, neither of them dcgm-exporter's 9400.
  auto plain = BuildWorkerPod(Job(), 0, 1);
  ASSERT_OK(plain);
  EXPECT_EQ(EnvValue((*plain)["spec"]["containers"][0], std::string(api::env::kHealthPort)),
            std::to_string(api::kWorkerHealthPort));
  EXPECT_NE(api::kWorkerHealthPort, 9400);
}

TEST(WorkerObjectsTest, HeadlessServiceSelectsWorkers) {
  auto svc = BuildHeadlessService(Job());
  ASSERT_OK(svc);
  EXPECT_EQ((*svc)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*svc)["spec"]["selector"][std::string(api::kJobNameLabel)], "bert");
}

TEST(WorkerObjectsTest, NetworkPolicyAdmitsOnlyTheJobsOwnPodsExceptOnTheHealthPort) {
  auto policy = BuildWorkerNetworkPolicy(Job());
  ASSERT_OK(policy) << policy.status();
  const json& p = *policy;
  const std::string job_label(api::kJobNameLabel);
  EXPECT_EQ(p["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(p["kind"], "NetworkPolicy");
  EXPECT_EQ(p["metadata"]["name"], "bert-workers");
  EXPECT_EQ(p["metadata"]["namespace"], "research");
  EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");  // deleted with the job
  EXPECT_EQ(p["metadata"]["labels"][job_label], "bert");
  // It selects exactly the pods BuildWorkerPod labels, whatever label the template tried to set.
  auto pod = BuildWorkerPod(Job(), 0, 1);
  ASSERT_OK(pod);
  EXPECT_EQ(p["spec"]["podSelector"], json({{"matchLabels", {{job_label, (*pod)["metadata"]["labels"][job_label]}}}}));
  // Ingress only: egress (apiserver, storage) is not restricted.
  EXPECT_EQ(p["spec"]["policyTypes"], json::array({"Ingress"}));
  const json& ingress = p["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 2u) << ingress.dump();
  // 1. Every port (the store on kCoordinatorPort, the collectives' dynamic ports), from this job's pods in
  //    this namespace only: no namespaceSelector, no ipBlock, no port list.
  const json& peers = ingress[0];
  EXPECT_FALSE(peers.contains("ports")) << peers.dump();
  ASSERT_EQ(peers["from"].size(), 1u);
  EXPECT_EQ(peers["from"][0], json({{"podSelector", {{"matchLabels", {{job_label, "bert"}}}}}}));
  // 2. The health/metrics port alone, from any source (Prometheus, the kubelet's probes).
  const json& health = ingress[1];
  EXPECT_FALSE(health.contains("from")) << health.dump();
  EXPECT_EQ(health["ports"], json::array({{{"protocol", "TCP"}, {"port", api::kWorkerHealthPort}}}));

  json no_uid = Job();
  no_uid["metadata"].erase("uid");
  EXPECT_EQ(BuildWorkerNetworkPolicy(no_uid).status().code(), StatusCode::kInvalidArgument);
}

TEST(WorkerObjectsTest, EveryContainerGetsTheJobSecretFromTheSecretTheMinimumAndTheMultiple) {
  auto pod = BuildWorkerPod(Job(), 1, 1);
  ASSERT_OK(pod) << pod.status();
  for (const json& c : (*pod)["spec"]["containers"]) {
    const json* secret = nullptr;
    for (const auto& e : c["env"])
      if (e["name"] == std::string(api::env::kSecret)) secret = &e;
    ASSERT_NE(secret, nullptr) << c.dump();
    // From the Secret by reference (the kubelet resolves it), never the value inlined in the pod.
    EXPECT_FALSE(secret->contains("value"));
    EXPECT_EQ((*secret)["valueFrom"]["secretKeyRef"]["name"], "bert-worker-secret");
    EXPECT_EQ((*secret)["valueFrom"]["secretKeyRef"]["key"], "secret");
    EXPECT_EQ(EnvValue(c, std::string(api::env::kMinWorkers)), "2");          // spec.replicas.min
    EXPECT_EQ(EnvValue(c, std::string(api::env::kReplicasMultipleOf)), "2");  // spec.replicas.multipleOf
  }
}

TEST(WorkerObjectsTest, TemplateMinWorkersOverrideStays) {
  json job = Job();
  job["spec"]["template"]["spec"]["containers"][0]["env"].push_back(
      {{"name", std::string(api::env::kMinWorkers)}, {"value", "1"}});
  auto pod = BuildWorkerPod(job, 0, 1);
  ASSERT_OK(pod);
  EXPECT_EQ(EnvValue((*pod)["spec"]["containers"][0], std::string(api::env::kMinWorkers)), "1");
}

TEST(WorkerObjectsTest, SecretIsOwnedImmutableAndHoldsTheValue) {
  auto secret = BuildWorkerSecret(Job(), "0123abcd");
  ASSERT_OK(secret) << secret.status();
  const json& s = *secret;
  EXPECT_EQ(s["kind"], "Secret");
  EXPECT_EQ(s["metadata"]["name"], "bert-worker-secret");
  EXPECT_EQ(s["metadata"]["namespace"], "research");
  EXPECT_EQ(s["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");  // deleted with the job
  EXPECT_EQ(s["metadata"]["labels"][std::string(api::kJobNameLabel)], "bert");
  EXPECT_EQ(s["immutable"], true);
  EXPECT_EQ(s["type"], "Opaque");
  auto decoded = kube::Base64Decode(s["data"]["secret"].get<std::string>());
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, "0123abcd");
  EXPECT_EQ(BuildWorkerSecret(Job(), "").status().code(), StatusCode::kInvalidArgument);
  json no_uid = Job();
  no_uid["metadata"].erase("uid");
  EXPECT_EQ(BuildWorkerSecret(no_uid, "x").status().code(), StatusCode::kInvalidArgument);
}

TEST(JobSecretTest, ThirtyTwoRandomBytesInHexNeverRepeated) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    auto secret = NewJobSecret();
    ASSERT_OK(secret) << secret.status();
    ASSERT_EQ(secret->size(), 2 * kJobSecretBytes);
    for (char c : *secret) EXPECT_TRUE(std::isdigit(c) || (c >= 'a' && c <= 'f')) << *secret;
    EXPECT_TRUE(seen.insert(*secret).second) << "repeated " << *secret;
  }
}

// spec.checkpoint: its volume is mounted at its path in every container (a container that mounts
// something there keeps it), and `keep` reaches the workers.
TEST(WorkerObjectsTest, CheckpointVolumeIsMountedAtItsPathAndKeepReachesTheWorkers) {
  json job = Job();
  job["spec"]["template"]["spec"]["containers"][1]["volumeMounts"] =
      json::array({{{"name", "other"}, {"mountPath", "/ckpt"}}});
  auto pod = BuildWorkerPod(job, 0, 1);
  ASSERT_OK(pod) << pod.status();
  const json& trainer = (*pod)["spec"]["containers"][0];
  EXPECT_EQ(trainer["volumeMounts"], json::array({{{"name", "ckpt"}, {"mountPath", "/ckpt"}}}));
  EXPECT_EQ((*pod)["spec"]["containers"][1]["volumeMounts"],
            json::array({{{"name", "other"}, {"mountPath", "/ckpt"}}}));
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kCheckpointKeep)), "5");

  json missing = Job();
  missing["spec"]["template"]["spec"].erase("volumes");
  auto refused = BuildWorkerPod(missing, 0, 1);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("spec.checkpoint.volumeName 'ckpt' names no volume"), std::string::npos)
      << refused.status();
}

// A pod that asks for nvidia.com/gpu trains on NCCL (auto would fall back to the CPU on a pod whose CUDA
// sees no GPU); a template's own RINGMASTER_BACKEND stays; a CPU pod gets none (auto: Gloo). Its failure
// reason reaches `kubectl describe pod` through its last log lines.
TEST(WorkerObjectsTest, GpuPodsAskForNcclAndReportWhyTheyFailed) {
  auto gpu = BuildWorkerPod(Job(), 0, 1);
  ASSERT_OK(gpu) << gpu.status();
  const json& trainer = (*gpu)["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kBackend)), "nccl");
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kDevice)), "0") << "a one-process pod uses its first GPU";
  EXPECT_EQ(trainer["terminationMessagePolicy"], "FallbackToLogsOnError");

  json own = Job();
  own["spec"]["template"]["spec"]["containers"][0]["env"].push_back({{"name", api::env::kBackend}, {"value", "gloo"}});
  auto kept = BuildWorkerPod(own, 0, 1);
  ASSERT_OK(kept);
  EXPECT_EQ(EnvValue((*kept)["spec"]["containers"][0], std::string(api::env::kBackend)), "gloo");

  json cpu = Job();
  cpu["spec"]["template"]["spec"]["containers"][0].erase("resources");
  auto plain = BuildWorkerPod(cpu, 0, 1);
  ASSERT_OK(plain);
  EXPECT_EQ(EnvValue((*plain)["spec"]["containers"][0], std::string(api::env::kBackend)), "<absent>");
}

// spec.processesPerPod: 2 on a 2-GPU pod: the command runs under ringmaster-launch (one process per GPU,
// each told its own device by the launcher, not by the pod), with a memory-backed /dev/shm for NCCL, and the
// workers' minimum world counts ranks. A container without a command cannot be wrapped: refused, saying so.
TEST(WorkerObjectsTest, SeveralProcessesRunUnderTheLauncherWithSharedMemory) {
  json job = Job();
  job["spec"]["template"]["spec"]["containers"][0]["command"] = {"python", "train.py"};
  job["spec"]["template"]["spec"]["containers"][0]["args"] = {"--epochs", "3"};
  auto pod = BuildWorkerPod(job, 0, 2);
  ASSERT_OK(pod) << pod.status();
  const json& trainer = (*pod)["spec"]["containers"][0];
  EXPECT_EQ(trainer["command"], json({kLaunchCommand, "--processes", "2", "--", "python", "train.py"}));
  EXPECT_EQ(trainer["args"], json({"--epochs", "3"}));
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kDevice)), "<absent>") << "the launcher pins each process";
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kMinWorkers)), "4") << "min 2 pods of 2 ranks";
  EXPECT_EQ(EnvValue(trainer, std::string(api::env::kBackend)), "nccl");
  std::string shm_volume;
  for (const auto& m : trainer["volumeMounts"])
    if (m["mountPath"] == "/dev/shm") shm_volume = m["name"];
  ASSERT_FALSE(shm_volume.empty()) << trainer.dump();
  bool memory_backed = false;
  for (const auto& v : (*pod)["spec"]["volumes"]) {
    if (v["name"] == shm_volume) {
      memory_backed = v["emptyDir"]["medium"] == "Memory" && v["emptyDir"]["sizeLimit"] == "2048Mi";
    }
  }
  EXPECT_TRUE(memory_backed) << (*pod)["spec"]["volumes"].dump();
  EXPECT_EQ((*pod)["spec"]["containers"][1].value("command", json()), json()) << "only the first container is wrapped";

  json no_command = Job();
  auto refused = BuildWorkerPod(no_command, 0, 2);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("needs spec.template.spec.containers[0].command"), std::string::npos)
      << refused.status();
}

TEST(WorkerObjectsTest, BadJobsAreRefusedWithAReason) {
  json no_uid = Job();
  no_uid["metadata"].erase("uid");
  EXPECT_EQ(BuildWorkerPod(no_uid, 0, 1).status().code(), StatusCode::kInvalidArgument);
  json no_containers = Job();
  no_containers["spec"]["template"]["spec"]["containers"] = json::array();
  auto s = BuildWorkerPod(no_containers, 0, 1).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("containers"), std::string::npos);
  EXPECT_FALSE(
      WorkerIndexOf(json{{"metadata", {{"labels", {{std::string(api::kWorkerIndexLabel), "x1"}}}}}}).has_value());
}

}  // namespace
}  // namespace ringmaster::controller
