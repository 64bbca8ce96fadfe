// The NCCL backend's fault tolerance on a real GPU (LABEL gpu: CI without GPUs
// skips it by label). Every collective's contract is in the conformance suite
// (comm/conformance), which runs on NCCL under the same label.
// Two ranks share one GPU when only one is visible (NCCL >= 2.30 with
// NCCL_MULTI_RANK_GPU_ENABLE=1); each rank is a forked process, and the parent
// never touches CUDA before forking.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>

#include "common/pattern.h"
#include "nccl/gpu_probe.h"
#include "nccl/nccl_communicator.h"
#include "testing/multiprocess.h"
#include "base/status_test_macros.h"

namespace ringmaster::runtime {
namespace {

using namespace std::chrono_literals;
using testing::RankContext;

bool GpuDeviceNodePresent() { return ::access("/dev/nvidia0", F_OK) == 0 || ::access("/dev/nvidiactl", F_OK) == 0; }

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&ptr, bytes ? bytes : 1), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
};

std::vector<uint8_t> RoundTrip(const std::vector<uint8_t>& host, size_t out_bytes,
                               const std::function<Status(void*, void*)>& run) {
  DeviceBuffer in(host.size()), out(out_bytes);
  EXPECT_EQ(cudaMemcpy(in.ptr, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  Status s = run(in.ptr, out.ptr);
  EXPECT_OK(s) << s;
  std::vector<uint8_t> result(out_bytes);
  EXPECT_EQ(cudaMemcpy(result.data(), out.ptr, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return result;
}

// A GPU, and several ranks allowed on it (NCCL >= 2.30).
class NcclGpuTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!GpuDeviceNodePresent()) GTEST_SKIP() << "no GPU on this machine";
    ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  }
};

// A peer dies: the survivors' collective times out, the communicator is revoked (NCCL >= 2.28),
// and the survivors shrink it (NCCL >= 2.27) into a working world of their own, keeping their
// relative order -- no new unique id, no full init (what the elastic driver does on a removal).
using NcclShrinkTest = NcclGpuTest;

TEST_P(NcclShrinkTest, SurvivorsShrinkAfterAPeerDies) {
  const int dead = GetParam();
  testing::WorldOptions options;
  options.size = 3;
  auto outcomes = testing::RunWorld(options, [dead](RankContext& ctx) {
    int gpus = nccl::VisibleGpuCount();
    ASSERT_GT(gpus, 0);
    NcclOptions no;
    no.device = ctx.rank % gpus;
    no.timeout = 5s;
    auto made = NcclCommunicator::Create(ctx.store, "nccl-shrink", ctx.rank, ctx.size, no);
    ASSERT_OK(made);
    Communicator& comm = **made;
    ASSERT_OK(comm.Barrier());
    if (ctx.rank == dead) ::_exit(0);  // gone without a word, as a killed pod
    const size_t count = 257;
    auto in = MakeInput(DataType::kFloat32, ReduceOp::kSum, ctx.rank, count);
    auto failed = [&] {
      DeviceBuffer i(in.size()), o(in.size());
      cudaMemcpy(i.ptr, in.data(), in.size(), cudaMemcpyHostToDevice);
      return comm.Allreduce(i.ptr, o.ptr, count, DataType::kFloat32, ReduceOp::kSum);
    }();
    EXPECT_EQ(failed.code(), StatusCode::kAborted) << failed;
    ASSERT_TRUE(comm.can_shrink()) << "NCCL " << nccl::LoadedVersion()->ToString()
                                   << " should have revoked, not aborted, the communicator";
    auto shrunk = comm.Shrink({dead}, "nccl-shrink/g2");
    ASSERT_OK(shrunk);
    Communicator& world = **shrunk;
    EXPECT_EQ(world.size(), 2);
    EXPECT_EQ(world.rank(), ctx.rank < dead ? ctx.rank : ctx.rank - 1);
    auto mine = MakeInput(DataType::kFloat32, ReduceOp::kSum, world.rank(), count);
    auto got = RoundTrip(mine, mine.size(), [&](void* i, void* o) {
      return world.Allreduce(i, o, count, DataType::kFloat32, ReduceOp::kSum);
    });
    auto want = ReferenceReduce(DataType::kFloat32, ReduceOp::kSum, 2, count);
    EXPECT_EQ(CountMismatches(DataType::kFloat32, got.data(), want.data(), count), 0u);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << testing::DescribeFailures(outcomes);
}

INSTANTIATE_TEST_SUITE_P(DeadRank, NcclShrinkTest, ::testing::Values(1, 2),
                         [](const auto& info) { return "rank" + std::to_string(info.param) + "_dies"; });

}  // namespace
}  // namespace ringmaster::runtime
