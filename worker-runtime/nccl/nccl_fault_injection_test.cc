// The NCCL backend when NCCL itself refuses a call inside a group (an enqueue that fails: a proxy
// connection NCCL could not set up). Only the CPU emulation can make that happen on demand
// (RINGMASTER_EMULATED_NCCL_FAIL, tests/gpu_emulation), so this test runs under the `gpu-emulated`
// label alone: it is evidence about our use of NCCL's group API, not about NCCL.
//
// What it guards: NcclCommunicator::Grouped closes the group before it revokes the communicator. A
// Revoke issued inside the caller's open group is only queued for that group's end (group.cc), so it
// would never run, and the thread would be left inside a group that swallows every later NCCL call.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <vector>

#include "base/status_test_macros.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/nccl/nccl_communicator.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::nccl {
namespace {

using namespace std::chrono_literals;

class NcclFaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Before any rank is forked, and before anything loads NCCL: the loader reads these once.
    ::setenv("RINGMASTER_EMULATED_GPUS", "4", 1);
    ::setenv("RINGMASTER_GPU_EMULATION_LIBRARY", RINGMASTER_EMULATION_LIBRARY, 0);  // unless set (the GPU kit)
    ::setenv("NCCL_DEBUG", "NONE", 1);  // the injected failure's WARN line is expected
  }
};

// Sum-allreduces `count` floats of value 1 on `device`; every element must come back as the world size.
void ExpectAllreduceSums(comm::Communicator& comm, int device) {
  const size_t count = 257;
  auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, device);
  std::vector<float> host(count, 1.0f);
  auto dev = memory->Allocate(count * sizeof(float));
  ASSERT_OK(dev);
  ASSERT_OK(memory->Upload(*dev, host.data(), count * sizeof(float)));
  ASSERT_OK(comm.Allreduce(*dev, *dev, count, common::DataType::kFloat32, common::ReduceOp::kSum));
  ASSERT_OK(memory->Download(host.data(), *dev, count * sizeof(float)));
  memory->Free(*dev);
  for (float v : host) ASSERT_EQ(v, static_cast<float>(comm.size()));
}

TEST_F(NcclFaultInjectionTest, AFailedEnqueueInsideAGroupClosesTheGroupBeforeRevoking) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    NcclOptions no;
    no.device = ctx.rank;
    no.timeout = 10s;
    auto made = NcclCommunicator::Create(ctx.store, "grouped", ctx.rank, ctx.size, no);
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    // Alltoall enqueues send/recv pairs in one group; the second send of each rank fails in it.
    ::setenv("RINGMASTER_EMULATED_NCCL_FAIL", "Send:2", 1);
    const size_t count = 64;
    auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, no.device);
    auto in = memory->Allocate(count * ctx.size * sizeof(float));
    auto out = memory->Allocate(count * ctx.size * sizeof(float));
    ASSERT_OK(in);
    ASSERT_OK(out);
    Status failed = comm.Alltoall(*in, *out, count, common::DataType::kFloat32);
    memory->Free(*in);
    memory->Free(*out);
    EXPECT_EQ(failed.code(), StatusCode::kAborted) << failed;
    EXPECT_NE(failed.message().find("ncclSend"), std::string::npos) << failed;
    ::unsetenv("RINGMASTER_EMULATED_NCCL_FAIL");

    // No group is left open on this thread: NCCL answers a group end outside any group with
    // ncclInvalidUsage (group.cc, ncclGroupEndInternal).
    auto api = nccl::Nccl();
    ASSERT_OK(api);
    EXPECT_EQ((*api)->ncclGroupEnd(), ncclInvalidUsage) << "Alltoall returned with its NCCL group still open";

    // The revoke ran (it was not queued in a group that never ended), so ranks 0 and 1 shrink the
    // communicator, leaving rank 2 out, instead of building a new one, and the child works.
    ASSERT_TRUE(comm.can_shrink()) << "the failed call aborted or never revoked the communicator";
    if (ctx.rank == 2) return;
    auto shrunk = comm.Shrink({2}, "grouped/g2");
    ASSERT_OK(shrunk);
    EXPECT_EQ((*shrunk)->size(), 2);
    ExpectAllreduceSums(**shrunk, no.device);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// What no rebuild repairs is told apart from a lost peer (gpu_errors.h): NCCL refusing the configuration at
// init (two ranks on one GPU: ncclInvalidUsage) is FailedPrecondition naming the GPU, not Aborted -- else the
// elastic driver rebuilt the same refused world every few seconds, forever.
TEST_F(NcclFaultInjectionTest, TwoRanksOnOneGpuAreARefusedConfigurationNotALostPeer) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    NcclOptions no;
    no.device = 0;  // both ranks
    no.timeout = 10s;
    auto made = NcclCommunicator::Create(ctx.store, "one-gpu", ctx.rank, ctx.size, no);
    ASSERT_FALSE(made.ok()) << "two ranks were put on one emulated GPU";
    EXPECT_EQ(made.status().code(), StatusCode::kFailedPrecondition) << made.status();
    EXPECT_NE(made.status().message().find("GPU 0"), std::string::npos) << made.status();
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// A kernel that faults (cudaErrorIllegalAddress: sticky, the GPU's context is lost) fails the collective with
// DataLoss naming the GPU, and the communicator says so from then on; its peer sees a lost peer (Aborted).
TEST_F(NcclFaultInjectionTest, AStickyCudaErrorIsDataLossNamingTheGpu) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    NcclOptions no;
    no.device = ctx.rank;
    no.timeout = 5s;
    auto made = NcclCommunicator::Create(ctx.store, "sticky", ctx.rank, ctx.size, no);
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    if (ctx.rank == 1) ::setenv("RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS", "1", 1);  // its next kernel faults
    const size_t count = 64;
    auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, no.device);
    auto buf = memory->Allocate(count * sizeof(float));
    ASSERT_OK(buf);
    Status s = comm.Allreduce(*buf, *buf, count, common::DataType::kFloat32, common::ReduceOp::kSum);
    ::unsetenv("RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS");
    ASSERT_FALSE(s.ok());
    if (ctx.rank == 1) {
      EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
      EXPECT_NE(s.message().find("GPU 1"), std::string::npos) << s;
      EXPECT_NE(s.message().find("cudaErrorIllegalAddress"), std::string::npos) << s;
      EXPECT_EQ(comm.health().code(), StatusCode::kDataLoss) << comm.health();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
    }
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::nccl
