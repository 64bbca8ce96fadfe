#include "worker-runtime/tools/launch/pod_processes.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "api/membership.h"
#include "api/names.h"
#include "base/status_test_macros.h"

namespace ringmaster::launch {
namespace {

using Env = std::map<std::string, std::string>;

std::string Var(std::string_view name) { return std::string(name); }

std::map<std::string, std::string> AsMap(const EnvironmentList& list) { return {list.begin(), list.end()}; }

TEST(LaunchEnvTest, PortsFallBackFromStoreToCoordinatorToTheDefaults) {
  auto pod = ReadPodEnvironment({{Var(api::env::kPodName), "job-worker-3"}}, 2);
  ASSERT_OK(pod);
  EXPECT_EQ(pod->pod, "job-worker-3");
  EXPECT_EQ(pod->store_port, api::kCoordinatorPort);
  EXPECT_EQ(pod->health_port, api::kWorkerHealthPort);

  pod = ReadPodEnvironment({{Var(api::env::kPodName), "p"}, {Var(api::env::kCoordinatorPort), "31000"}}, 2);
  ASSERT_OK(pod);
  EXPECT_EQ(pod->store_port, 31000);

  pod = ReadPodEnvironment({{Var(api::env::kPodName), "p"},
                            {Var(api::env::kCoordinatorPort), "31000"},
                            {Var(api::env::kStorePort), "32000"},
                            {Var(api::env::kHealthPort), "0"}},
                           2);
  ASSERT_OK(pod);
  EXPECT_EQ(pod->store_port, 32000);
  EXPECT_EQ(pod->health_port, 0);
}

TEST(LaunchEnvTest, AMissingPodNameOrABadPortIsNamed) {
  auto pod = ReadPodEnvironment({}, 2);
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.status().message().find(Var(api::env::kPodName)), std::string::npos) << pod.status();
  EXPECT_NE(pod.status().message().find("--processes 1"), std::string::npos) << "what to do: " << pod.status();

  pod = ReadPodEnvironment({{Var(api::env::kPodName), ""}}, 2);
  EXPECT_FALSE(pod.ok()) << "an empty pod name counts as unset";

  for (const auto& [name, value] :
       std::vector<std::pair<std::string_view, std::string>>{{api::env::kStorePort, "x"},
                                                             {api::env::kStorePort, "65535"},
                                                             {api::env::kStorePort, "0"},
                                                             {api::env::kCoordinatorPort, "-4"},
                                                             {api::env::kHealthPort, "65534"}}) {
    pod = ReadPodEnvironment({{Var(api::env::kPodName), "p"}, {Var(name), value}}, 4);
    ASSERT_FALSE(pod.ok()) << name << "=" << value;
    EXPECT_NE(pod.status().message().find(Var(name)), std::string::npos) << pod.status();
  }
  EXPECT_OK(ReadPodEnvironment({{Var(api::env::kPodName), "p"}, {Var(api::env::kStorePort), "65532"}}, 4));
}

TEST(LaunchEnvTest, EachProcessGetsItsIdPortsDeviceAndLocalRank) {
  const PodEnvironment pod{"job-worker-0", 29500, 9400};
  auto first = AsMap(ProcessEnvironment(pod, 0, 3));
  EXPECT_EQ(first[Var(api::env::kWorkerId)], "job-worker-0");
  EXPECT_EQ(first[Var(api::env::kStorePort)], "29500");
  EXPECT_EQ(first[Var(api::env::kHealthPort)], "9400");
  EXPECT_EQ(first[Var(api::env::kDevice)], "0");
  EXPECT_EQ(first[Var(kLocalRankVar)], "0");
  EXPECT_EQ(first[Var(kLocalWorldSizeVar)], "3");
  auto third = AsMap(ProcessEnvironment(pod, 2, 3));
  EXPECT_EQ(third[Var(api::env::kWorkerId)], api::WorkerId("job-worker-0", 2));
  EXPECT_EQ(third[Var(api::env::kWorkerId)], "job-worker-0:2");
  EXPECT_EQ(third[Var(api::env::kStorePort)], "29502");
  EXPECT_EQ(third[Var(api::env::kHealthPort)], "9402");
  EXPECT_EQ(third[Var(api::env::kDevice)], "2");
  EXPECT_EQ(third[Var(kLocalRankVar)], "2");
  EXPECT_EQ(third.size(), 6u);

  const PodEnvironment any_port{"p", 29500, 0};
  EXPECT_EQ(AsMap(ProcessEnvironment(any_port, 2, 3))[Var(api::env::kHealthPort)], "0") << "0 stays 0";
}

}  // namespace
}  // namespace ringmaster::launch
