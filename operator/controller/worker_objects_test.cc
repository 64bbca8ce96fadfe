#include "controller/worker_objects.h"

#include <gtest/gtest.h>

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

json Job() {
  return json::parse(R"({
    "apiVersion": "ringmaster.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "bert", "namespace": "research", "uid": "job-uid-1"},
    "spec": {
      "replicas": {"min": 2, "max": 4},
      "checkpoint": {"volumeName": "ckpt", "path": "/ckpt"},
      "scheduling": {"priorityClassName": "training"},
      "template": {
        "metadata": {"labels": {"team": "nlp", "ringmaster.io/job-name": "spoofed"}},
        "spec": {"containers": [
          {"name": "trainer", "image": "t:1", "env": [{"name": "RINGMASTER_WORKER_INDEX", "value": "keep-mine"}],
           "resources": {"limits": {"nvidia.com/gpu": 2}}},
          {"name": "sidecar", "image": "s:1", "readinessProbe": {"exec": {"command": ["true"]}}}]}}}})");
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const auto& e : container["env"])
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : e["valueFrom"].dump();
  return "<absent>";
}

TEST(WorkerObjectsTest, PodCarriesIdentityOwnerAndGpuLimits) {
  auto pod = BuildWorkerPod(Job(), 3);
  ASSERT_TRUE(pod.ok()) << pod.status();
  const json& p = *pod;
  EXPECT_EQ(p["metadata"]["name"], "bert-worker-3");
  EXPECT_EQ(p["metadata"]["namespace"], "research");
  EXPECT_EQ(p["metadata"]["labels"]["ringmaster.io/job-name"], "bert");  // ours win over the template's
  EXPECT_EQ(p["metadata"]["labels"]["ringmaster.io/worker-index"], "3");
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
  EXPECT_EQ(EnvValue(trainer, "RINGMASTER_JOB_NAME"), "bert");
  EXPECT_NE(EnvValue(trainer, "RINGMASTER_POD_NAME").find("metadata.name"), std::string::npos);
  EXPECT_NE(EnvValue(trainer, "RINGMASTER_POD_IP").find("status.podIP"), std::string::npos);
  EXPECT_EQ(EnvValue(trainer, "RINGMASTER_WORKER_INDEX"), "keep-mine");  // the template's own value stays
  EXPECT_EQ(EnvValue(trainer, "RINGMASTER_CHECKPOINT_DIR"), "/ckpt");
  EXPECT_EQ(trainer["readinessProbe"]["httpGet"]["path"], "/readyz");
  // A container with its own probe keeps it.
  EXPECT_TRUE(p["spec"]["containers"][1]["readinessProbe"].contains("exec"));
}

TEST(WorkerObjectsTest, TemplateServiceAccountIsUsedAndBound) {
  json job = Job();
  job["spec"]["template"]["spec"]["serviceAccountName"] = "team-sa";
  auto pod = BuildWorkerPod(job, 0);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["serviceAccountName"], "team-sa");
  auto binding = BuildWorkerRoleBinding(job);
  ASSERT_TRUE(binding.ok());
  EXPECT_EQ((*binding)["subjects"][0]["name"], "team-sa");
  EXPECT_EQ((*binding)["roleRef"]["name"], "bert-worker");
}

TEST(WorkerObjectsTest, RoleGrantsReadOnThisJobOnly) {
  auto role = BuildWorkerRole(Job());
  ASSERT_TRUE(role.ok());
  const json& rule = (*role)["rules"][0];
  EXPECT_EQ(rule["resourceNames"], json::array({"bert"}));
  EXPECT_EQ(rule["verbs"], json::array({"get", "list", "watch"}));
  EXPECT_EQ(rule["resources"], json::array({"trainingjobs"}));
}

TEST(WorkerObjectsTest, HeadlessServiceSelectsWorkers) {
  auto svc = BuildHeadlessService(Job());
  ASSERT_TRUE(svc.ok());
  EXPECT_EQ((*svc)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*svc)["spec"]["selector"]["ringmaster.io/job-name"], "bert");
}

TEST(WorkerObjectsTest, BadJobsAreRefusedWithAReason) {
  json no_uid = Job();
  no_uid["metadata"].erase("uid");
  EXPECT_EQ(BuildWorkerPod(no_uid, 0).status().code(), StatusCode::kInvalidArgument);
  json no_containers = Job();
  no_containers["spec"]["template"]["spec"]["containers"] = json::array();
  auto s = BuildWorkerPod(no_containers, 0).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("containers"), std::string::npos);
  EXPECT_FALSE(WorkerIndexOf(json{{"metadata", {{"labels", {{"ringmaster.io/worker-index", "x1"}}}}}}).has_value());
}

}  // namespace
}  // namespace ringmaster::controller
