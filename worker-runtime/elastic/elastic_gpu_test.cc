// The elastic loop on GPUs (label gpu), and on the CPU emulation of NCCL and CUDA
// (label gpu-emulated, RINGMASTER_EMULATED_GPUS=4: each rank its own emulated GPU,
// so a rank put on another rank's GPU fails as NCCL does): ringmaster-train-example with
// --backend nccl under ringmaster-run. A worker killed mid-run is a removal, so
// the survivors shrink their NCCL communicator (ncclCommShrink) instead of
// building a new one; the add that follows needs a fresh init. Either way the
// run ends with the weights of a one-process CPU run and every sample once per
// epoch. Three ranks share one GPU when only one is visible
// (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL >= 2.30).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "worker-runtime/testing/chaos_harness.h"
#include "worker-runtime/testing/gpu_test_env.h"

namespace {

using namespace ringmaster::runtime_testing;

TEST(ElasticGpuTest, KilledWorkerIsShrunkAwayThenAnAddBuildsAfresh) {
  const std::string why = ringmaster::runtime_testing::WhyNoGpuSuite();
  ASSERT_TRUE(why.empty()) << why;
  if (!ringmaster::runtime_testing::EmulatedGpus()) ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  const std::string out = (Root() / "nccl").string();
  ASSERT_EQ(Launch(out, "--np 3 --min 2 --max 4 --chaos kill@5:2,add@12:1",
                   "--backend nccl --step-delay-ms 30 --timeout-ms 20000"),
            0);
  ExpectMatchesReference(out, 3);
  EXPECT_GE(CountInLog(out, "(shrunk)"), 2) << "the survivors did not shrink their communicator";
  EXPECT_GE(CountInLog(out, "communicator: a fresh build"), 1) << "the add did not build afresh";
  if (!HasFailure()) std::filesystem::remove_all(Root());
}

// One worker more than there are GPUs, and no device given: the last worker's GPU index is beyond the visible
// GPUs, which no rebuild repairs. The run must end within seconds, non-zero, with the worker's termination
// message naming its GPU (failure_class.h, termination_report.h), not rebuild the same generation every few
// seconds until a deadline.
TEST(ElasticGpuTest, MoreWorkersThanGpusEndTheRunWithATerminationMessage) {
  const std::string why = ringmaster::runtime_testing::WhyNoGpuSuite();
  ASSERT_TRUE(why.empty()) << why;
  const bool emulated = ringmaster::runtime_testing::EmulatedGpus();
  // The emulation's RINGMASTER_EMULATED_GPUS GPUs (4 under ctest), or one real GPU.
  const int gpus = emulated ? std::atoi(::getenv("RINGMASTER_EMULATED_GPUS")) : 1;
  const std::string out = (Root() / "np-beyond-gpus").string();
  const auto t0 = std::chrono::steady_clock::now();
  const int code =
      Launch(out, "--np " + std::to_string(gpus + 1) + " --min 1",
             "--backend nccl --step-delay-ms 30 --timeout-ms 20000", emulated ? "" : "CUDA_VISIBLE_DEVICES=0");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(code, 0) << "the run finished with a worker on a GPU that does not exist";
  EXPECT_LT(seconds, 30) << "the run did not end within seconds (it rebuilt until its deadline?)";
  EXPECT_GE(CountInLog(out, "cannot go on: worker w"), 1) << "the launcher printed no termination message";
  EXPECT_GE(CountInLog(out, ", GPU " + std::to_string(gpus)), 1)
      << "no termination message names the GPU beyond the " << gpus << " visible ones";
  EXPECT_EQ(CountInLog(out, "building it again"), 0) << "a worker rebuilt what no rebuild repairs";
  if (!HasFailure()) std::filesystem::remove_all(out);
}

}  // namespace
