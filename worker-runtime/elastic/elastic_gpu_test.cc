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

}  // namespace
