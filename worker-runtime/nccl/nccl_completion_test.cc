// What a collective's OK means on NCCL, and how a communicator ends, on the CPU emulation of
// NCCL and CUDA under its failure knobs (tests/gpu_emulation): only the emulation fails on demand, so this
// runs under the `gpu-emulated` label alone -- evidence about our use of NCCL's API, not about NCCL.
//
//   * complete means complete: a drained stream with an asynchronous error is a failed collective, and
//     health() says so (NCCL_ASYNC_ERROR);
//   * an allreduce interrupted by Abort() while a peer has vanished ends Aborted, never OK (NCCL_VANISH);
//   * an orderly end finalizes then destroys the NCCL communicator; an aborted one is aborted (the
//     emulation's INFO lines, as NCCL's "Destroy COMPLETE" / "Abort COMPLETE");
//   * a device index beyond the visible GPUs is refused, unless NCCL_MULTI_RANK_GPU_ENABLE=1.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/status_test_macros.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/nccl/nccl_communicator.h"
#include "worker-runtime/runtime/world.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::nccl {
namespace {

using namespace std::chrono_literals;

class NcclCompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Before any rank is forked, and before anything loads NCCL: the loader reads these once.
    ::setenv("RINGMASTER_EMULATED_GPUS", "4", 1);
    ::setenv("RINGMASTER_GPU_EMULATION_LIBRARY", RINGMASTER_EMULATION_LIBRARY, 0);  // unless set (the GPU kit)
    ::setenv("NCCL_DEBUG", "NONE", 1);
  }
};

StatusOr<std::unique_ptr<comm::Communicator>> Make(runtime::RankContext& ctx, const std::string& prefix) {
  NcclOptions no;
  no.device = ctx.rank;
  no.timeout = 10s;
  return NcclCommunicator::Create(ctx.store, prefix, ctx.rank, ctx.size, no);
}

// Sum-allreduces 64 floats of 1 on the rank's GPU; the status, and in *sum the first element.
Status AllreduceOnes(comm::Communicator& comm, int device, float* sum = nullptr) {
  auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, device);
  std::vector<float> host(64, 1.0f);
  auto dev = memory->Allocate(host.size() * sizeof(float));
  if (!dev.ok()) return dev.status();
  Status s = memory->Upload(*dev, host.data(), host.size() * sizeof(float));
  if (s.ok()) s = comm.Allreduce(*dev, *dev, host.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
  if (s.ok() && sum != nullptr) {
    Status d = memory->Download(host.data(), *dev, host.size() * sizeof(float));
    *sum = d.ok() ? host[0] : -1.0f;
  }
  memory->Free(*dev);
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The stream drains and the data moved, but NCCL reports an asynchronous error (a connection that failed as
// the operation ended): the collective fails, and the communicator's health says why.
TEST_F(NcclCompletionTest, ADrainedStreamWithAnAsyncErrorIsAFailedCollective) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto made = Make(ctx, "async");
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    ::setenv("RINGMASTER_EMULATED_NCCL_ASYNC_ERROR", "AllReduce:2", 1);
    float sum = 0;
    ASSERT_OK(AllreduceOnes(comm, ctx.rank, &sum));
    EXPECT_EQ(sum, 2.0f);
    Status s = AllreduceOnes(comm, ctx.rank);
    ::unsetenv("RINGMASTER_EMULATED_NCCL_ASYNC_ERROR");
    EXPECT_EQ(s.code(), StatusCode::kAborted) << "a drained stream with an async error returned " << s;
    EXPECT_NE(s.message().find("remote process exited"), std::string::npos) << s;
    EXPECT_EQ(comm.health().code(), StatusCode::kAborted) << comm.health();
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// A peer that vanishes without a word (no async error, as on NVLink): the survivor's allreduce hangs until
// Abort() from another thread; it then ends Aborted, never OK with what the aborted kernel left.
TEST_F(NcclCompletionTest, AnAllreduceInterruptedByAbortIsNeverOk) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto made = Make(ctx, "vanish");
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    ASSERT_OK(AllreduceOnes(comm, ctx.rank));
    if (ctx.rank == 1) ::setenv("RINGMASTER_EMULATED_NCCL_VANISH", "AllReduce:1", 1);  // counted from now
    std::thread aborter([&] {
      std::this_thread::sleep_for(500ms);
      comm.Abort("the test's deadline");
    });
    Status s = AllreduceOnes(comm, ctx.rank);
    aborter.join();
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// An orderly end finalizes and destroys; an aborted communicator is aborted.
TEST_F(NcclCompletionTest, AnOrderlyEndFinalizesAndAnAbortedOneAborts) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    const std::string log = "/tmp/ringmaster-nccl-teardown-" + std::to_string(::getpid()) + ".log";
    ::unlink(log.c_str());
    ::setenv("NCCL_DEBUG_FILE", log.c_str(), 1);
    ::setenv("NCCL_DEBUG", "INFO", 1);  // read at each INFO line by the emulation
    {
      auto made = Make(ctx, "orderly");
      ASSERT_OK(made);
      ASSERT_OK(AllreduceOnes(**made, ctx.rank));
    }
    std::string text = ReadFile(log);
    EXPECT_NE(text.find("Destroy COMPLETE"), std::string::npos) << text;
    EXPECT_EQ(text.find("Abort COMPLETE"), std::string::npos) << text;
    ::unlink(log.c_str());
    {
      auto made = Make(ctx, "aborted");
      ASSERT_OK(made);
      ASSERT_OK(AllreduceOnes(**made, ctx.rank));
      (*made)->Abort("the generation ended in failure");
    }
    text = ReadFile(log);
    EXPECT_NE(text.find("Abort COMPLETE"), std::string::npos) << text;
    EXPECT_EQ(text.find("Destroy COMPLETE"), std::string::npos) << text;
    ::unlink(log.c_str());
    ::setenv("NCCL_DEBUG", "NONE", 1);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// Local rank 4 with 4 GPUs visible: refused, saying what to do -- not wrapped onto GPU 0, which rank 0 uses.
// With NCCL_MULTI_RANK_GPU_ENABLE=1 ranks may share GPUs: it wraps.
TEST_F(NcclCompletionTest, ALocalRankBeyondTheVisibleGpusIsRefused) {
  runtime_testing::WorldOptions options;
  options.size = 1;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    runtime::WorldOptions wo;
    wo.backend = comm::Backend::kNccl;
    wo.local_rank = 4;
    wo.timeout = 10s;
    wo.prefix = "beyond";
    auto refused = runtime::CreateWorldCommunicator(ctx.store, 0, 1, wo);
    ASSERT_FALSE(refused.ok()) << "local rank 4 was put on a GPU of 4";
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
    EXPECT_NE(refused.status().message().find("local rank 4 needs GPU 4 but only 4 GPUs are visible"),
              std::string::npos)
        << refused.status();
    EXPECT_NE(refused.status().message().find("nvidia.com/gpu"), std::string::npos) << refused.status();
    EXPECT_EQ(DeviceIndex(-1, 5, 4, /*multi_rank_gpu=*/true).value(), 1);
    EXPECT_EQ(DeviceIndex(2, 7, 4, /*multi_rank_gpu=*/false).value(), 2);  // RINGMASTER_DEVICE wins
    EXPECT_EQ(DeviceIndex(4, 0, 4, /*multi_rank_gpu=*/false).status().code(), StatusCode::kInvalidArgument);
    ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
    wo.prefix = "shared";
    auto shared = runtime::CreateWorldCommunicator(ctx.store, 0, 1, wo);
    ::unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
    ASSERT_OK(shared);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::nccl
