#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace ringmaster::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A manual clock.
struct FakeClock {
  std::atomic<TimePoint::rep> ticks{0};
  NowFn Fn() {
    return [this] { return TimePoint(TimePoint::duration(ticks.load())); };
  }
  void Advance(Duration d) { ticks += std::chrono::duration_cast<TimePoint::duration>(d).count(); }
};

TEST(TokenBucketTest, BurstThenQps) {
  FakeClock clock;
  TokenBucket b(10, 3, clock.Fn());
  EXPECT_EQ(b.Reserve(), Duration::zero());
  EXPECT_EQ(b.Reserve(), Duration::zero());
  EXPECT_EQ(b.Reserve(), Duration::zero());
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(b.Reserve()), milliseconds(100));
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(b.Reserve()), milliseconds(200));  // reservations queue
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(milliseconds(300));
  EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(seconds(100));  // refill is capped at burst
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
}

TEST(TokenBucketTest, ZeroQpsMeansUnlimited) {
  TokenBucket b(0, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(b.Reserve(), Duration::zero());
}

// A caller waiting for a token (1000 s away) returns false as soon as its cancellation trips; one that comes
// after the cancel does not wait at all.
TEST(TokenBucketTest, AWaitForATokenEndsWhenCancelled) {
  TokenBucket b(0.001, 1);
  Cancellation cancel;
  ASSERT_TRUE(b.Accept(cancel));  // the burst
  std::atomic<bool> got{true};
  std::thread waiter([&] { got = b.Accept(cancel); });
  cancel.Cancel();
  waiter.join();  // 1000 s if the wait ignored the cancel
  EXPECT_FALSE(got);
  EXPECT_FALSE(b.Accept(cancel));
}

TEST(ItemExponentialFailureRateLimiterTest, DoublesPerItemUpToMax) {
  ItemExponentialFailureRateLimiter l(milliseconds(5), seconds(1));
  EXPECT_EQ(l.When("a"), milliseconds(5));
  EXPECT_EQ(l.When("a"), milliseconds(10));
  EXPECT_EQ(l.When("a"), milliseconds(20));
  EXPECT_EQ(l.When("b"), milliseconds(5));  // per item
  EXPECT_EQ(l.NumRequeues("a"), 3);
  for (int i = 0; i < 40; ++i) l.When("a");
  EXPECT_EQ(l.When("a"), seconds(1));
  l.Forget("a");
  EXPECT_EQ(l.NumRequeues("a"), 0);
  EXPECT_EQ(l.When("a"), milliseconds(5));
}

TEST(MaxOfRateLimiterTest, DefaultControllerLimiterTakesTheMax) {
  FakeClock clock;
  auto l = DefaultControllerRateLimiter(clock.Fn());
  // The bucket (10 qps, burst 100) does not bite for the first 100 failures; per-item backoff does.
  EXPECT_EQ(l->When("x"), milliseconds(5));
  EXPECT_EQ(l->When("x"), milliseconds(10));
  for (int i = 0; i < 98; ++i) l->When("item" + std::to_string(i));
  // Burst used up: a fresh item now waits for the bucket (100 ms), more than its 5 ms backoff.
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(l->When("fresh")), milliseconds(100));
  EXPECT_EQ(l->NumRequeues("x"), 2);
  l->Forget("x");
  EXPECT_EQ(l->NumRequeues("x"), 0);
}

}  // namespace
}  // namespace ringmaster::kube
