// PendingWaits (gloo_abort.h): Abort() ends a wait on one of our own unbound buffers that nothing else
// would end before Gloo's timeout -- here a peer that is alive, connected and simply never sends, the
// shape of the wait Gloo leaves behind when it drops a send whose write failed -- and buffers tracked
// after the abort are aborted as they come. A wait that is not aborted runs to its 60 s timeout and
// throws, so an abort that does not reach the buffer fails the test (by an exception, not by a clock).
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/gloo/gloo_abort.h"
#include "worker-runtime/gloo/gloo_store.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::gloo {
namespace {

using namespace std::chrono_literals;

constexpr auto kWaitTimeout = 60s;

std::shared_ptr<::gloo::Context> Connect(runtime::RankContext& ctx) {
  ::gloo::transport::tcp::attr attr("127.0.0.1");
  auto context = std::make_shared<::gloo::rendezvous::Context>(ctx.rank, ctx.size);
  GlooStore store(ctx.store, "pending-waits", 30s);
  std::shared_ptr<::gloo::transport::Device> device = ::gloo::transport::tcp::CreateDevice(attr);
  context->connectFullMesh(store, device);
  return context;
}

TEST(PendingWaitsTest, AbortEndsAWaitNothingElseWouldAndLaterBuffersComeAborted) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    auto context = Connect(ctx);
    if (ctx.rank == 1) {  // connected, alive, and never sends
      EXPECT_OK(ctx.store->Wait({"done"}, 120s));
      return;
    }
    PendingWaits waits;
    float x = 0;
    auto buffer = context->createUnboundBuffer(&x, sizeof x);
    buffer->recv(1, /*slot=*/7);
    bool completed = true;
    {
      PendingWaits::Scope tracked(&waits, {buffer.get()});
      std::thread aborter([&] {
        std::this_thread::sleep_for(300ms);  // the wait below has begun by then (an earlier abort works too)
        waits.Abort();
      });
      try {
        completed = buffer->waitRecv(kWaitTimeout);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "the wait ended by Gloo's timeout, not by the abort: " << e.what();
      }
      aborter.join();
    }
    EXPECT_FALSE(completed) << "waitRecv reported data that was never sent";

    float y = 0;
    auto later = context->createUnboundBuffer(&y, sizeof y);
    later->recv(1, /*slot=*/8);
    PendingWaits::Scope tracked_later(&waits, {later.get()});
    try {
      EXPECT_FALSE(later->waitRecv(kWaitTimeout));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a buffer tracked after Abort() was not aborted: " << e.what();
    }
    EXPECT_OK(ctx.store->Set("done", "1"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::gloo
