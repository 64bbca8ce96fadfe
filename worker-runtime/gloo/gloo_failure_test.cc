// Failure semantics of the Gloo backend: a peer that dies (kill -9) or stalls
// mid-collective makes every survivor's call return Aborted within the
// configured timeout, and the communicator stays unusable afterwards; Abort from
// another thread ends a collective in flight at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::gloo {
namespace {

using namespace std::chrono_literals;

constexpr auto kTimeout = 1500ms;
// Generous slack for a loaded 2-core CI machine and sanitizers; the point is "bounded", not "fast".
constexpr auto kSlack = 3000ms;

std::unique_ptr<comm::Communicator> MakeWorld(runtime::RankContext& ctx) {
  GlooOptions options;
  options.timeout = kTimeout;
  auto comm = GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, options);
  EXPECT_OK(comm) << comm.status();
  return comm.ok() ? std::move(comm).value() : nullptr;
}

// Survivors loop on a large allreduce until it fails, then check how it failed.
void SurviveUntilAborted(comm::Communicator& comm, std::vector<float>& buf) {
  Status failed;
  store::Clock::duration failed_after{};
  for (int i = 0; i < 1000 && failed.ok(); ++i) {
    auto start = store::Clock::now();
    failed = comm.Allreduce(buf.data(), buf.data(), buf.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    failed_after = store::Clock::now() - start;
  }
  ASSERT_EQ(failed.code(), StatusCode::kAborted) << failed;
  EXPECT_LT(failed_after, kTimeout + kSlack)
      << "took " << std::chrono::duration_cast<std::chrono::milliseconds>(failed_after).count() << " ms";
  // Unusable until rebuilt: every later call fails at once with Aborted.
  auto start = store::Clock::now();
  EXPECT_EQ(comm.Allreduce(buf.data(), buf.data(), 1, common::DataType::kFloat32, common::ReduceOp::kSum).code(),
            StatusCode::kAborted);
  EXPECT_EQ(comm.Barrier().code(), StatusCode::kAborted);
  EXPECT_FALSE(comm.health().ok());
  EXPECT_LT(store::Clock::now() - start, 1000ms);  // "at once": no network wait (generous for a loaded machine)
}

TEST(GlooFailureTest, KilledPeerMidAllreduceAbortsSurvivorsWithinTimeout) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  options.wait_for_all_at_exit = false;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto comm = MakeWorld(ctx);
    ASSERT_NE(comm, nullptr);
    std::vector<float> buf(8u << 20, 1.0f);  // 32 MiB: long enough to be killed in the middle
    if (ctx.rank == 2) {
      ASSERT_OK(
          comm->Allreduce(buf.data(), buf.data(), buf.size(), common::DataType::kFloat32, common::ReduceOp::kSum));
      std::thread killer([] {
        std::this_thread::sleep_for(15ms);
        ::raise(SIGKILL);
      });
      for (;;)
        (void)comm->Allreduce(buf.data(), buf.data(), buf.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    }
    SurviveUntilAborted(*comm, buf);
  });
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes[0].ok()) << runtime::DescribeFailures(outcomes);
  EXPECT_TRUE(outcomes[1].ok()) << runtime::DescribeFailures(outcomes);
  EXPECT_EQ(outcomes[2].signal, SIGKILL);
}

TEST(GlooFailureTest, StalledPeerTimesOutAsAborted) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto comm = MakeWorld(ctx);
    ASSERT_NE(comm, nullptr);
    std::vector<float> buf(1024, 1.0f);
    if (ctx.rank == 1) {  // never joins the collective, but stays alive until the others are done
      EXPECT_OK(ctx.store->Wait({"survivor/0", "survivor/2"}, 30s));
      return;
    }
    auto start = store::Clock::now();
    Status s = comm->Allreduce(buf.data(), buf.data(), buf.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    auto took = store::Clock::now() - start;
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
    EXPECT_LT(took, kTimeout + kSlack);
    EXPECT_EQ(comm->Barrier().code(), StatusCode::kAborted);
    EXPECT_OK(ctx.store->Set("survivor/" + std::to_string(ctx.rank), "done"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

TEST(GlooFailureTest, AbortFromAnotherThreadMakesLaterCallsFail) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto comm = MakeWorld(ctx);
    ASSERT_NE(comm, nullptr);
    ASSERT_OK(comm->Barrier());
    std::thread([&] { comm->Abort("membership changed"); }).join();
    Status s = comm->Barrier();
    EXPECT_EQ(s.code(), StatusCode::kAborted);
    EXPECT_NE(s.message().find("membership changed"), std::string::npos) << s;
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

// The elastic driver's watcher aborts the runtime of every survivor when a new membership generation
// appears: a collective in flight must end then, not at its timeout.
TEST(GlooFailureTest, AbortFromAnotherThreadEndsACollectiveInFlight) {
  constexpr auto kLongTimeout = 60s;
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    GlooOptions go;
    go.timeout = kLongTimeout;
    auto comm = GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, go);
    ASSERT_OK(comm);
    std::vector<float> buf(1024, 1.0f);
    if (ctx.rank == 0) {  // never joins the collective (and serves the store): the others stay blocked
      EXPECT_OK(ctx.store->Wait({"survivor/1", "survivor/2"}, 120s));
      return;
    }
    std::thread watcher([&] {
      std::this_thread::sleep_for(300ms);  // the collective is blocked by then
      (*comm)->Abort("membership generation 2");
    });
    auto start = store::Clock::now();
    Status s =
        (*comm)->Allreduce(buf.data(), buf.data(), buf.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    auto took = store::Clock::now() - start;
    watcher.join();
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
    EXPECT_LT(took, kLongTimeout / 2) << "ended by its timeout, not by the abort";
    EXPECT_OK(ctx.store->Set("survivor/" + std::to_string(ctx.rank), "done"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::gloo
