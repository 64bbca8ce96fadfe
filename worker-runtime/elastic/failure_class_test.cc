// Which failures a rebuild repairs (failure_class.h), and what a worker that cannot go on leaves behind
// (termination_report.h).
#include "worker-runtime/elastic/failure_class.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/status_test_macros.h"
#include "worker-runtime/elastic/termination_report.h"

namespace ringmaster::elastic {
namespace {

TEST(FailureClassTest, APeerThatDiedOrHungIsAMembershipFailure) {
  for (Status s : {AbortedError("communicator 'g3.0/world' rank 1: ncclAllReduce: remote process exited"),
                   DeadlineExceededError("rendezvous at 10.0.0.1:29500"), UnavailableError("store went away"),
                   CancelledError("the membership source stopped")}) {
    EXPECT_EQ(ClassifyFailure(s), FailureClass::kMembership) << s;
    EXPECT_TRUE(RebuildRepairs(s)) << s;
  }
}

TEST(FailureClassTest, WhatNoRebuildRepairsEndsTheWorker) {
  // A sticky CUDA error or ncclUnhandledCudaError (nccl/gpu_errors.h), a GPU library that cannot be loaded or
  // used, a refused configuration, a broken invariant, a wrong secret.
  for (Status s : {DataLossError("communicator 'g1.0/world' rank 0 on GPU 2: cudaErrorIllegalAddress"),
                   NotFoundError("no NCCL library could be loaded"),
                   FailedPreconditionError("NCCL init of 'g1.0/world' failed: invalid usage"),
                   InvalidArgumentError("device 4 is beyond the 4 visible GPUs"), InternalError("restoring the state"),
                   UnauthenticatedError("wrong job secret"), ResourceExhaustedError("cudaMalloc")}) {
    EXPECT_EQ(ClassifyFailure(s), FailureClass::kEndsWorker) << s;
    EXPECT_FALSE(RebuildRepairs(s)) << s;
  }
  EXPECT_NE(Describe(FailureClass::kEndsWorker), Describe(FailureClass::kMembership));
}

TEST(TerminationReportTest, TheMessageNamesTheWorkerNodeGpuAndErrorInTheFileTheEnvironmentNames) {
  const std::string dir = ::testing::TempDir() + "termination-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::map<std::string, std::string> env = {{"RINGMASTER_TERMINATION_LOG", dir + "/termination-log"},
                                                  {"RINGMASTER_NODE_NAME", "gpu-node-7"}};
  EXPECT_EQ(TerminationLogPath(env), dir + "/termination-log");
  EXPECT_EQ(TerminationLogPath({}), "/dev/termination-log");
  EXPECT_EQ(NodeFromEnvironment(env), "gpu-node-7");
  EXPECT_EQ(NodeFromEnvironment({{"NODE_NAME", "n2"}}), "n2");
  EXPECT_EQ(NodeFromEnvironment({}), "");
  EXPECT_EQ(DescribeGpu(-1, {}), "");
  const std::string gpu = DescribeGpu(2, {});
  EXPECT_EQ(gpu.rfind("2", 0), 0u) << gpu;  // "2", or "2 (GPU-...)" where NVML knows the card

  const Status why = DataLossError("communicator 'g1.0/world' rank 0 on GPU 2: cudaErrorIllegalAddress");
  auto written =
      WriteTerminationMessage(TerminationLogPath(env), {"w3", NodeFromEnvironment(env), gpu, why.ToString()});
  ASSERT_OK(written) << written.status();
  std::ifstream in(dir + "/termination-log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), *written);
  const api::WorkerTermination back = api::ParseTerminationMessage(text.str());
  EXPECT_EQ(back.worker, "w3");
  EXPECT_EQ(back.node, "gpu-node-7");
  EXPECT_EQ(back.gpu, gpu);
  EXPECT_EQ(back.error, why.ToString());

  EXPECT_EQ(WriteTerminationMessage(dir + "/no-such-dir/log", {}).status().code(), StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::elastic
