// A runtime whose world runs NCCL takes host tensors too: each request runs where its memory is -- GPU
// buffers on NCCL, host buffers on the host communicator beside it (Horovod's CPU ops on Gloo) --
// negotiated and ordered together. What the elastic state's sync, broadcast_object and metric averaging
// need on a GPU job. Registered as the GPU suite (label `gpu`) and on the CPU emulation of NCCL and
// CUDA (label `gpu-emulated`), like the rest of the NCCL tests.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <vector>

#include "base/status_test_macros.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/runtime/runtime.h"
#include "worker-runtime/testing/gpu_test_env.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::runtime {
namespace {

using namespace std::chrono_literals;

class HostBesideNcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = runtime_testing::WhyNoGpuSuite(); !why.empty()) FAIL() << why;
    if (!runtime_testing::EmulatedGpus()) ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  }
};

std::unique_ptr<Runtime> NcclRuntime(RankContext& ctx) {
  RuntimeConfig config;
  config.backend = comm::Backend::kNccl;
  config.timeout = 20s;
  config.device = ctx.rank;  // % visible GPUs
  auto rt = Runtime::Create(config, ctx.store, ctx.rank, ctx.size);
  EXPECT_OK(rt);
  return rt.ok() ? std::move(rt).value() : nullptr;
}

TEST_F(HostBesideNcclTest, HostAndGpuTensorsInterleaveEachWhereItsMemoryIs) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = NcclRuntime(ctx);
    ASSERT_NE(rt, nullptr);
    ASSERT_EQ(rt->backend(), comm::Backend::kNccl);
    const size_t count = 1000;
    auto gpu = memory::NewMemoryFor(comm::MemoryKind::kCuda, rt->device());
    std::vector<float> host(count, static_cast<float>(ctx.rank + 1)), from_gpu(count);
    auto dev = gpu->Allocate(count * sizeof(float));
    ASSERT_OK(dev);
    ASSERT_OK(gpu->Upload(*dev, host.data(), count * sizeof(float)));
    std::vector<int64_t> object(4, ctx.rank == 1 ? 42 : 0), gathered(3);
    const int64_t mine = 10 * ctx.rank;

    // Submitted together, so one negotiation cycle holds both kinds.
    fusion::Handle a =
        rt->AllreduceAsync("gpu.grad", *dev, *dev, count, common::DataType::kFloat32, common::ReduceOp::kSum);
    fusion::Handle b = rt->AllreduceAsync("cpu.metric", host.data(), host.data(), count, common::DataType::kFloat32,
                                          common::ReduceOp::kSum);
    fusion::Handle c =
        rt->BroadcastAsync("cpu.object", object.data(), object.data(), object.size(), common::DataType::kInt64, 1);
    fusion::Handle d = rt->AllgatherAsync("cpu.sizes", &mine, gathered.data(), 1, common::DataType::kInt64);
    ASSERT_OK(a.Wait());
    ASSERT_OK(b.Wait());
    ASSERT_OK(c.Wait());
    ASSERT_OK(d.Wait());
    ASSERT_OK(gpu->Download(from_gpu.data(), *dev, count * sizeof(float)));
    gpu->Free(*dev);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(from_gpu[i], 6.0f) << "GPU allreduce, element " << i;
      ASSERT_EQ(host[i], 6.0f) << "host allreduce, element " << i;
    }
    EXPECT_EQ(object, std::vector<int64_t>(4, 42));
    EXPECT_EQ(gathered, (std::vector<int64_t>{0, 10, 20}));
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << DescribeFailures(outcomes);
}

TEST_F(HostBesideNcclTest, OneHostAndOneGpuBufferInACallIsRefusedAndTheRuntimeGoesOn) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = NcclRuntime(ctx);
    ASSERT_NE(rt, nullptr);
    auto gpu = memory::NewMemoryFor(comm::MemoryKind::kCuda, rt->device());
    auto dev = gpu->Allocate(64 * sizeof(float));
    ASSERT_OK(dev);
    std::vector<float> host(64, 1.0f);
    Status mixed = rt->Allreduce("mixed", host.data(), *dev, 64, common::DataType::kFloat32, common::ReduceOp::kSum);
    EXPECT_EQ(mixed.code(), StatusCode::kInvalidArgument) << mixed;
    EXPECT_NE(mixed.message().find("host memory and the other a GPU's"), std::string::npos) << mixed;
    // Refused before negotiation: the next collective still matches on every rank.
    ASSERT_OK(rt->Allreduce("after", host.data(), host.data(), 64, common::DataType::kFloat32, common::ReduceOp::kSum));
    EXPECT_EQ(host[0], 2.0f);
    gpu->Free(*dev);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::runtime
