#include "api/worker_env.h"

#include <gtest/gtest.h>

#include "api/names.h"
#include "base/status_test_macros.h"

namespace ringmaster::api {
namespace {

using json = nlohmann::json;

// What the operator knows when it builds a pod, plus what the kubelet fills in.
WorkerEnv PodWorker() {
  WorkerEnv e;
  e.job_name = "bert";
  e.job_namespace = "default";
  e.pod_name = "bert-worker-3";
  e.pod_uid = "uid-3";
  e.pod_ip = "10.0.0.4";
  e.node_name = "gpu-7";
  e.worker_index = 3;
  e.secret = "s3cret";
  e.min_workers = 2;
  e.replicas_multiple_of = 2;
  e.coordinator_port = kCoordinatorPort;
  e.health_port = kWorkerHealthPort;
  e.checkpoint_dir = "/ckpt";
  e.timeline = "/tmp/timeline.{rank}.json";
  e.fusion_threshold_bytes = "1024";
  return e;
}

// Resolves a container env list as the kubelet would, for a pod and its job's Secret.
std::map<std::string, std::string> Resolve(const json& env_list, const json& pod, const std::string& secret_name,
                                           const std::map<std::string, std::string>& secret_data) {
  std::map<std::string, std::string> out;
  for (const auto& e : env_list) {
    const std::string name = e["name"];
    if (e.contains("value")) {
      out[name] = e["value"];
    } else if (e["valueFrom"].contains("fieldRef")) {
      std::string path = e["valueFrom"]["fieldRef"]["fieldPath"];
      out[name] = pod.at(json::json_pointer("/" + path.replace(path.find('.'), 1, "/")));
    } else {
      const json& ref = e["valueFrom"]["secretKeyRef"];
      EXPECT_EQ(ref["name"], secret_name);
      out[name] = secret_data.at(ref["key"]);
    }
  }
  return out;
}

TEST(WorkerEnvTest, PodEnvResolvedByTheKubeletGivesTheSameEnvBack) {
  const WorkerEnv original = PodWorker();
  json env = original.ToPodEnv({"bert-worker-secret", "secret"});
  json pod = {{"metadata", {{"namespace", "default"}, {"name", "bert-worker-3"}, {"uid", "uid-3"}}},
              {"status", {{"podIP", "10.0.0.4"}}},
              {"spec", {{"nodeName", "gpu-7"}}}};
  auto back = WorkerEnv::FromEnvironment(Resolve(env, pod, "bert-worker-secret", {{"secret", "s3cret"}}));
  ASSERT_OK(back);
  EXPECT_EQ(*back, original);
}

TEST(WorkerEnvTest, PodEnvListsTheDownwardApiAndTheSecretAsBefore) {
  WorkerEnv e;
  e.job_name = "bert";
  e.worker_index = 0;
  e.coordinator_port = kCoordinatorPort;
  json env = e.ToPodEnv({"s", "k"});
  ASSERT_EQ(env.size(), 9u) << env.dump();
  EXPECT_EQ(env[0], (json{{"name", env::kJobName}, {"value", "bert"}}));
  EXPECT_EQ(env[4]["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
  EXPECT_EQ(env[8]["name"], env::kSecret);
  EXPECT_EQ(env[8]["valueFrom"]["secretKeyRef"], (json{{"name", "s"}, {"key", "k"}}));
}

TEST(WorkerEnvTest, ProcessEnvironmentRoundTrips) {
  WorkerEnv e;
  e.worker_id = "w3";
  e.membership_file = "/out/membership.json";
  e.heartbeat_file = "/out/hb.w3";
  e.out = "/out";
  e.secret = "x";
  e.store_port = 40001;
  e.health_port = 0;
  e.min_workers = 1;
  e.backend = "";  // set but empty: kept verbatim
  auto vars = e.ToEnvironment();
  EXPECT_EQ(vars.at(std::string(env::kHealthPort)), "0");
  auto back = WorkerEnv::FromEnvironment(vars);
  ASSERT_OK(back);
  EXPECT_EQ(*back, e);
}

TEST(WorkerEnvTest, BadIntegerNamesTheVariable) {
  for (std::string_view var : {env::kWorkerIndex, env::kMinWorkers, env::kReplicasMultipleOf, env::kCoordinatorPort,
                               env::kStorePort, env::kHealthPort}) {
    auto got = WorkerEnv::FromEnvironment({{std::string(var), "4abc"}});
    ASSERT_FALSE(got.ok()) << var;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), std::string(var) + "='4abc' is not an integer");
  }
  auto empty = WorkerEnv::FromEnvironment({{std::string(env::kStorePort), ""}, {std::string(env::kPodName), ""}});
  ASSERT_OK(empty);
  EXPECT_EQ(*empty, WorkerEnv{});
}

}  // namespace
}  // namespace ringmaster::api
