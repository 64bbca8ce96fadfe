// Cancellation: a tripped switch ends sleeps and runs the callbacks registered at that moment, once.
#include "kube/cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace ringmaster::kube {
namespace {

using std::chrono::hours;

TEST(CancellationTest, ASleepEndsWhenCancelledFromAnotherThread) {
  Cancellation c;
  std::atomic<bool> slept_fully{true};
  std::thread sleeper([&] { slept_fully = c.SleepFor(hours(1)); });
  c.Cancel();
  sleeper.join();  // would take an hour if the sleep did not end
  EXPECT_FALSE(slept_fully);
  EXPECT_TRUE(c.cancelled());
}

TEST(CancellationTest, SleepsAfterTheCancelReturnFalseAtOnce) {
  Cancellation c;
  EXPECT_TRUE(c.SleepFor(std::chrono::nanoseconds(0)));
  EXPECT_FALSE(c.cancelled());
  c.Cancel();
  c.Cancel();  // idempotent
  EXPECT_FALSE(c.SleepFor(std::chrono::nanoseconds(0)));
  EXPECT_FALSE(c.SleepFor(hours(1)));
}

TEST(CancellationTest, CallbacksRunOnceForLiveRegistrationsOnly) {
  Cancellation c;
  int live = 0, dropped = 0;
  Cancellation::Registration kept = c.OnCancel([&] { ++live; });
  {
    Cancellation::Registration gone = c.OnCancel([&] { ++dropped; });
  }
  Cancellation::Registration moved_from = c.OnCancel([&] { ++live; });
  Cancellation::Registration moved = std::move(moved_from);
  c.Cancel();
  c.Cancel();
  EXPECT_EQ(live, 2);
  EXPECT_EQ(dropped, 0);
}

TEST(CancellationTest, ARegistrationAfterTheCancelRunsAtOnce) {
  Cancellation c;
  c.Cancel();
  bool ran = false;
  Cancellation::Registration r = c.OnCancel([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace ringmaster::kube
