// The NCCL backend's fault tolerance: revoke and shrink after a kill, split, grow, deadlines, wrong
// buffers. Registered twice (worker-runtime/CMakeLists.txt): label `gpu` on NVIDIA GPUs, and label
// `gpu-emulated` on the CPU emulation of NCCL and CUDA (RINGMASTER_EMULATED_GPUS=4,
// tests/gpu_emulation), which proves our use of NCCL's API, not NCCL. Every collective's contract is
// in the conformance suite (testing/conformance), which runs on NCCL under the same labels.
//
// Each rank is a forked process and the parent never touches CUDA before forking. Ranks take GPU
// rank % visible GPUs; when they must share one (a one-GPU machine), NCCL >= 2.30 allows it with
// NCCL_MULTI_RANK_GPU_ENABLE=1, which the parent sets then.
#include "worker-runtime/nccl/nccl_communicator.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/common/pattern.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/nccl/cuda_fence.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/testing/gpu_test_env.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::nccl {
namespace {

using namespace std::chrono_literals;

class NcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = runtime_testing::WhyNoGpuSuite(); !why.empty()) FAIL() << why;
    if (!runtime_testing::EmulatedGpus()) ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  }
  void TearDown() override { ::unsetenv("RINGMASTER_EMULATED_NCCL_LATENCY_MS"); }
};

int Gpus() {
  StatusOr<int> n = nccl::VisibleGpus();
  EXPECT_OK(n) << n.status();
  return n.ok() ? *n : 0;
}

StatusOr<std::unique_ptr<comm::Communicator>> MakeWorld(runtime::RankContext& ctx, const std::string& prefix, int rank,
                                                        int size, std::chrono::milliseconds timeout) {
  NcclOptions options;
  options.device = rank % std::max(1, Gpus());
  options.timeout = timeout;
  return NcclCommunicator::Create(ctx.store, prefix, rank, size, options);
}

// Allreduce (sum, float32) of the pattern inputs on `comm`, checked against the host reference.
void ExpectAllreduceWorks(comm::Communicator& comm, int device) {
  const size_t count = 1031;
  auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, device);
  auto in = common::MakeInput(common::DataType::kFloat32, common::ReduceOp::kSum, comm.rank(), count);
  auto dev = memory->Allocate(in.size());
  ASSERT_OK(dev);
  ASSERT_OK(memory->Upload(*dev, in.data(), in.size()));
  ASSERT_OK(comm.Allreduce(*dev, *dev, count, common::DataType::kFloat32, common::ReduceOp::kSum));
  std::vector<uint8_t> got(in.size());
  ASSERT_OK(memory->Download(got.data(), *dev, got.size()));
  memory->Free(*dev);
  auto want = common::ReferenceReduce(common::DataType::kFloat32, common::ReduceOp::kSum, comm.size(), count);
  EXPECT_EQ(common::CountMismatches(common::DataType::kFloat32, got.data(), want.data(), count), 0u);
}

// An allreduce of the pattern inputs while a peer is gone. Without a deadline it could hang; with one it ends
// Aborted -- or, on a real NCCL, it may end OK on a rank whose part of the algorithm never waits on the dead
// peer (seen on an H200: 2 of 3 survivors of a 4-rank world of one GPU, NCCL 2.30.7). Then nothing can be
// assumed about the result (NCCL's contract after a failure), and `completed_sum_of` says what it held: the
// number of ranks whose inputs it summed (0: neither all nor all but the dead one's).
Status AllreduceWithAPeerGone(comm::Communicator& comm, int device, int dead = -1, int* completed_sum_of = nullptr) {
  const size_t count = 1024;
  auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, device);
  auto in = common::MakeInput(common::DataType::kFloat32, common::ReduceOp::kSum, comm.rank(), count);
  auto dev = memory->Allocate(in.size());
  if (!dev.ok()) return dev.status();
  Status s = memory->Upload(*dev, in.data(), in.size());
  if (s.ok()) s = comm.Allreduce(*dev, *dev, count, common::DataType::kFloat32, common::ReduceOp::kSum);
  if (s.ok() && completed_sum_of != nullptr) {
    std::vector<uint8_t> got(in.size());
    if (Status d = memory->Download(got.data(), *dev, got.size()); !d.ok()) {
      memory->Free(*dev);
      return d;
    }
    auto all = common::ReferenceReduce(common::DataType::kFloat32, common::ReduceOp::kSum, comm.size(), count);
    std::vector<uint8_t> without(in.size(), 0);  // the sum over every rank but `dead`
    std::vector<float> acc(count, 0.0f);
    for (int r = 0; r < comm.size(); ++r) {
      if (r == dead) continue;
      auto x = common::MakeInput(common::DataType::kFloat32, common::ReduceOp::kSum, r, count);
      for (size_t i = 0; i < count; ++i) acc[i] += reinterpret_cast<const float*>(x.data())[i];
    }
    std::memcpy(without.data(), acc.data(), without.size());
    const bool is_all = common::CountMismatches(common::DataType::kFloat32, got.data(), all.data(), count) == 0;
    const bool is_without = common::CountMismatches(common::DataType::kFloat32, got.data(), without.data(), count) == 0;
    *completed_sum_of = is_all ? comm.size() : is_without ? comm.size() - 1 : 0;
  }
  memory->Free(*dev);
  return s;
}

bool KilledBySigkill(const runtime::RankOutcome& o) { return !o.exited && o.signal == SIGKILL; }

// A peer is killed: the survivors' collective times out, the communicator is revoked (NCCL >= 2.28.7,
// ncclInProgress until quiescent), and the survivors shrink it in default mode into a world of their
// own, keeping their relative order -- no new unique id, no full init.
class NcclShrinkTest : public NcclTest, public ::testing::WithParamInterface<int> {};

TEST_P(NcclShrinkTest, SurvivorsRevokeThenShrinkAfterAKill) {
  const int dead = GetParam();
  runtime_testing::WorldOptions options;
  options.size = 4;
  auto outcomes = runtime_testing::RunWorld(options, [dead](runtime::RankContext& ctx) {
    auto made = MakeWorld(ctx, "shrink", ctx.rank, ctx.size, 2s);
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    ASSERT_OK(comm.Barrier());
    if (ctx.rank == dead) ::raise(SIGKILL);  // gone without a word, as a killed pod
    const int device = ctx.rank % Gpus();
    int sum_of = -1;
    Status failed = AllreduceWithAPeerGone(comm, device, dead, &sum_of);
    EXPECT_TRUE(failed.ok() || failed.code() == StatusCode::kAborted) << failed;
    // Complete means complete: an OK is only ever the full sum (the peer contributed before it died). A partial
    // result -- the survivors' sum, or neither sum, which a kernel stopped by the abort flag leaves behind an idle
    // stream -- must come back as an error, never as OK (the H200 saw it in 3 of 6 runs before WaitStream's check).
    if (failed.ok()) {
      EXPECT_EQ(sum_of, ctx.size) << "rank " << ctx.rank << ": the allreduce returned OK with rank " << dead
                                  << " gone, holding "
                                  << (sum_of == ctx.size - 1 ? "the sum of the survivors' inputs" : "neither sum");
    }
    ASSERT_TRUE(comm.can_shrink()) << "NCCL " << nccl::LoadedVersion()->ToString()
                                   << " should have revoked, not aborted, the communicator";
    auto shrunk = comm.Shrink({dead}, "shrink/g2");
    ASSERT_OK(shrunk);
    EXPECT_EQ((*shrunk)->size(), 3);
    EXPECT_EQ((*shrunk)->rank(), ctx.rank < dead ? ctx.rank : ctx.rank - 1);
    ExpectAllreduceWorks(**shrunk, device);
  });
  for (const auto& o : outcomes) {
    if (o.rank == dead) {
      EXPECT_TRUE(KilledBySigkill(o)) << runtime::DescribeFailures(outcomes);
    } else {
      EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DeadRank, NcclShrinkTest, ::testing::Values(0, 3),
                         [](const auto& info) { return "rank" + std::to_string(info.param) + "_killed"; });

// NCCL writes a shrink's child from its own thread when the job ends; here it ends 300 ms after the
// call returned ncclInProgress (the emulation's latency knob; a real NCCL is late on its own).
TEST_F(NcclTest, AShrinkWhoseChildArrivesLateIsWaitedFor) {
  ::setenv("RINGMASTER_EMULATED_NCCL_LATENCY_MS", "300", 1);
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto made = MakeWorld(ctx, "late", ctx.rank, ctx.size, 5s);
    ASSERT_OK(made);
    ASSERT_OK((*made)->Barrier());
    if (ctx.rank == 2) ::raise(SIGKILL);
    (*made)->Abort("the test's peer is gone");  // nothing in flight: the shrink terminates (NCCL_SHRINK_ABORT)
    auto shrunk = (*made)->Shrink({2}, "late/g2");
    ASSERT_OK(shrunk);
    ExpectAllreduceWorks(**shrunk, ctx.rank % Gpus());
  });
  EXPECT_OK(outcomes[0]) << runtime::DescribeFailures(outcomes);
  EXPECT_OK(outcomes[1]) << runtime::DescribeFailures(outcomes);
}

// Split by colour: every rank calls it; members get the child, the others nullptr.
TEST_F(NcclTest, SplitByColour) {
  runtime_testing::WorldOptions options;
  options.size = 4;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto made = MakeWorld(ctx, "split", ctx.rank, ctx.size, 20s);
    ASSERT_OK(made);
    const std::vector<int> even = {0, 2}, odd = {1, 3};
    auto e = (*made)->Split(even, "even");
    ASSERT_OK(e);
    auto o = (*made)->Split(odd, "odd");
    ASSERT_OK(o);
    comm::Communicator* mine = ctx.rank % 2 == 0 ? e->get() : o->get();
    const comm::Communicator* other = ctx.rank % 2 == 0 ? o->get() : e->get();
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(other, nullptr);
    EXPECT_EQ(mine->size(), 2);
    EXPECT_EQ(mine->rank(), ctx.rank / 2);
    ExpectAllreduceWorks(*mine, ctx.rank % Gpus());
    ExpectAllreduceWorks(**made, ctx.rank % Gpus());  // the parent still works
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// Grow by one (NCCL >= 2.29.2): three ranks keep their numbers, a newcomer becomes rank 3.
TEST_F(NcclTest, GrowByOne) {
  runtime_testing::WorldOptions options;
  options.size = 4;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    NcclOptions no;
    no.device = ctx.rank % Gpus();
    no.timeout = 20s;
    std::unique_ptr<comm::Communicator> grown;
    if (ctx.rank < 3) {
      auto made = NcclCommunicator::Create(ctx.store, "grow", ctx.rank, 3, no);
      ASSERT_OK(made);
      ExpectAllreduceWorks(**made, no.device);
      auto& nccl = static_cast<NcclCommunicator&>(**made);
      ASSERT_TRUE(nccl.can_grow()) << "NCCL " << nccl::LoadedVersion()->ToString();
      auto g = nccl.Grow(*ctx.store, "grow/g2", 4);
      ASSERT_OK(g);
      grown = std::move(*g);
    } else {
      auto g = NcclCommunicator::JoinGrown(ctx.store, "grow/g2", 3, 4, no);
      ASSERT_OK(g);
      grown = std::move(*g);
    }
    EXPECT_EQ(grown->size(), 4);
    EXPECT_EQ(grown->rank(), ctx.rank);
    ExpectAllreduceWorks(*grown, no.device);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// A rank never arrives: init ends Aborted at the deadline, nothing is left behind, and the same
// process builds the next communicator.
TEST_F(NcclTest, InitTimesOutAndAbortsCleanly) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    if (ctx.rank == 2) return;  // never calls init
    auto made = MakeWorld(ctx, "absent", ctx.rank, 3, 1s);
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), StatusCode::kAborted) << made.status();
    EXPECT_NE(made.status().message().find("timed out"), std::string::npos) << made.status();
    auto next = MakeWorld(ctx, "present", ctx.rank, 2, 20s);
    ASSERT_OK(next);
    ExpectAllreduceWorks(**next, ctx.rank % Gpus());
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// A survivor never joins the shrink: the others' shrink ends Aborted at the deadline, the parent is
// aborted (it cannot shrink again), and destroying it returns.
TEST_F(NcclTest, ShrinkTimesOutAndAbortsCleanly) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto made = MakeWorld(ctx, "stuck", ctx.rank, ctx.size, 5s);  // 1 s was too short to init 3 ranks on an H200
    ASSERT_OK(made);
    ASSERT_OK((*made)->Barrier());
    if (ctx.rank == 2) ::raise(SIGKILL);
    Status failed = AllreduceWithAPeerGone(**made, ctx.rank % Gpus());
    EXPECT_EQ(failed.code(), StatusCode::kAborted) << failed;
    if (ctx.rank == 1) return;  // never shrinks
    auto shrunk = (*made)->Shrink({2}, "stuck/g2");
    ASSERT_FALSE(shrunk.ok());
    EXPECT_EQ(shrunk.status().code(), StatusCode::kAborted) << shrunk.status();
    EXPECT_FALSE((*made)->can_shrink());
    made->reset();  // must not hang
  });
  EXPECT_OK(outcomes[0]) << runtime::DescribeFailures(outcomes);
  EXPECT_OK(outcomes[1]) << runtime::DescribeFailures(outcomes);
}

// A buffer of another GPU, or of the host, is refused before NCCL sees it, in words a user can act on,
// and the communicator stays usable. (On a one-GPU machine only the host buffer can be tried.)
TEST_F(NcclTest, ABufferOfAnotherDeviceIsRefused) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    const int gpus = Gpus();
    auto made = MakeWorld(ctx, "wrong", ctx.rank, ctx.size, 20s);
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    std::vector<float> host(64, 1.0f);
    Status on_host =
        comm.Allreduce(host.data(), host.data(), host.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    EXPECT_EQ(on_host.code(), StatusCode::kInvalidArgument) << on_host;
    EXPECT_NE(on_host.message().find("host memory"), std::string::npos) << on_host;
    if (gpus >= 2) {
      const int other = (ctx.rank + 1) % gpus;
      auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, other);
      auto dev = memory->Allocate(256);
      ASSERT_OK(dev);
      Status wrong = comm.Allreduce(*dev, *dev, 64, common::DataType::kFloat32, common::ReduceOp::kSum);
      EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument) << wrong;
      EXPECT_NE(wrong.message().find("memory of GPU " + std::to_string(other)), std::string::npos) << wrong;
      memory->Free(*dev);
    }
    EXPECT_OK(comm.health());
    ExpectAllreduceWorks(comm, ctx.rank % gpus);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// The communicator's calls act on its own GPU from any thread: CUDA's current device is per thread, so
// a collective, a split and a scratch buffer (Barrier) made on a fresh thread (device 0) must still
// land on the communicator's device.
TEST_F(NcclTest, CallsFromAnotherThreadUseTheCommunicatorsDevice) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    const int gpus = Gpus();
    const int device = (ctx.rank + 1) % gpus;  // not device 0 on rank 0, whenever there are two GPUs
    NcclOptions no;
    no.device = device;
    no.timeout = 20s;
    auto made = NcclCommunicator::Create(ctx.store, "threads", ctx.rank, ctx.size, no);
    ASSERT_OK(made);
    std::thread([&] {
      ASSERT_OK((*made)->Barrier());
      ExpectAllreduceWorks(**made, device);
      auto child = (*made)->Split({0, 1}, "both");
      ASSERT_OK(child);
      ASSERT_OK((*child)->Barrier());
      ExpectAllreduceWorks(**child, device);
    }).join();
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

// Counts how a fence was used, passing the calls on.
class CountingFence : public comm::ReadyFence {
 public:
  explicit CountingFence(std::shared_ptr<comm::ReadyFence> fence) : fence_(std::move(fence)) {}
  Status Wait() override {
    ++waits;
    return fence_->Wait();
  }
  Status OrderStream(void* stream) override {
    ++stream_orders;
    EXPECT_NE(stream, nullptr) << "the communicator's own stream, never the legacy default one";
    return fence_->OrderStream(stream);
  }
  std::atomic<int> waits{0}, stream_orders{0};

 private:
  std::shared_ptr<comm::ReadyFence> fence_;
};

// torch's pattern: the input is produced on the caller's stream (here a 64 MiB copy, then the input's), the
// caller records a fence there and goes on without waiting; the collective's stream waits for it on the device.
// The host never waits for the fence, and the allreduce sums the inputs the producer stream wrote.
TEST_F(NcclTest, ACollectiveWaitsOnTheDeviceForItsInputsStreamAndTheHostDoesNot) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    const int device = ctx.rank % std::max(1, Gpus());
    auto made = MakeWorld(ctx, "fenced", ctx.rank, ctx.size, 20s);
    ASSERT_OK(made);
    comm::Communicator& comm = **made;
    auto cuda = nccl::Cuda();
    ASSERT_OK(cuda);
    const CudaApi& api = **cuda;
    DeviceGuard guard(api, device);
    ASSERT_OK(guard.status());
    cudaStream_t producer;
    ASSERT_EQ(api.cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
    const size_t count = 1 << 16;
    auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, device);
    auto in = common::MakeInput(common::DataType::kFloat32, common::ReduceOp::kSum, comm.rank(), count);
    std::vector<uint8_t> pad(64 << 20, 1);
    auto dev = memory->Allocate(in.size());
    auto pad_dev = memory->Allocate(pad.size());
    ASSERT_OK(dev);
    ASSERT_OK(pad_dev);
    ASSERT_EQ(api.cudaMemcpyAsync(*pad_dev, pad.data(), pad.size(), cudaMemcpyHostToDevice, producer), cudaSuccess);
    ASSERT_EQ(api.cudaMemcpyAsync(*dev, in.data(), in.size(), cudaMemcpyHostToDevice, producer), cudaSuccess);
    auto fence = CudaEventFence::Record(api, device, producer);
    ASSERT_OK(fence);
    CountingFence counting(*fence);
    ASSERT_OK(comm.OrderAfter(counting));
    ASSERT_OK(comm.Allreduce(*dev, *dev, count, common::DataType::kFloat32, common::ReduceOp::kSum));
    EXPECT_EQ(counting.stream_orders.load(), 1);
    EXPECT_EQ(counting.waits.load(), 0) << "the host waited for the input's stream";
    std::vector<uint8_t> got(in.size());
    ASSERT_OK(memory->Download(got.data(), *dev, got.size()));
    auto want = common::ReferenceReduce(common::DataType::kFloat32, common::ReduceOp::kSum, comm.size(), count);
    EXPECT_EQ(common::CountMismatches(common::DataType::kFloat32, got.data(), want.data(), count), 0u);
    ASSERT_EQ(api.cudaStreamSynchronize(producer), cudaSuccess);
    memory->Free(*dev);
    memory->Free(*pad_dev);
    api.cudaStreamDestroy(producer);
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::nccl
