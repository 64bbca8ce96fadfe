#include "worker-runtime/elastic/hang_watchdog.h"

#include <gtest/gtest.h>

namespace ringmaster::elastic {
namespace {

using namespace std::chrono_literals;
using Clock = HangWatchdog::Clock;

// A clock the test moves by hand.
struct FakeClock {
  Clock::time_point t = Clock::time_point{} + 1000s;
  void Advance(Clock::duration d) { t += d; }
};

HangWatchdogOptions Options(double factor, std::chrono::milliseconds floor, int window = 32, int min_steps = 3) {
  HangWatchdogOptions o;
  o.factor = factor;
  o.floor = floor;
  o.window = window;
  o.min_steps = min_steps;
  return o;
}

// The committed step numbers, as the driver counts them.
int64_t step = 0;

// After a Reset: the warm-up step, then one commit every `every` for `steps` durations.
void Train(HangWatchdog& w, FakeClock& clock, Clock::duration every, int steps, Clock::duration warmup = 1s) {
  clock.Advance(warmup);
  w.Committed(++step);
  for (int i = 0; i < steps; ++i) {
    clock.Advance(every);
    w.Committed(++step);
  }
}

TEST(HangWatchdogTest, HungAfterFactorTimesTheMedianStep) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s), [&] { return clock.t; });
  w.Reset(step = 40);
  Train(w, clock, 500ms, 5);
  clock.Advance(4900ms);
  EXPECT_FALSE(w.Check());  // 4.9 s < 10 x 0.5 s
  clock.Advance(100ms);
  auto v = w.Check();
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->median_seconds, 0.5);
  EXPECT_DOUBLE_EQ(v->limit_seconds, 5.0);
  EXPECT_DOUBLE_EQ(v->stalled_seconds, 5.0);
  EXPECT_EQ(v->steps, 5);
  EXPECT_EQ(v->step, 46);  // resumed after 40: the warm-up step and 5 more
}

TEST(HangWatchdogTest, TheMedianIgnoresAnOddSlowStep) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 1s, 4);
  clock.Advance(60s);  // an evaluation pause, once
  w.Committed(++step);
  clock.Advance(1s);
  w.Committed(++step);
  // Durations 1,1,1,1,60,1: the median is 1 s (a mean would be ~10.8 s).
  clock.Advance(9s);
  EXPECT_FALSE(w.Check());
  clock.Advance(1s);
  auto v = w.Check();
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->median_seconds, 1.0);
}

TEST(HangWatchdogTest, NeverSoonerThanTheFloor) {
  FakeClock clock;
  HangWatchdog w(Options(10, 30s), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 100ms, 10);
  clock.Advance(29s);  // 290 x the median, but below the floor
  EXPECT_FALSE(w.Check());
  clock.Advance(1s);
  auto v = w.Check();
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->limit_seconds, 30.0);
}

TEST(HangWatchdogTest, NoVerdictBeforeEnoughStepsOfTheGeneration) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s, 32, 3), [&] { return clock.t; });
  EXPECT_FALSE(w.Check());  // never reset: no generation joined
  clock.Advance(1h);
  EXPECT_FALSE(w.Check());
  w.Reset(0);
  clock.Advance(1h);  // a long first step (warm-up, a restore): no verdict
  EXPECT_FALSE(w.Check());
  w.Committed(++step);
  clock.Advance(1s);
  w.Committed(++step);
  clock.Advance(1s);
  w.Committed(++step);  // two durations
  clock.Advance(1h);
  EXPECT_FALSE(w.Check());
  w.Committed(++step);  // the third
  clock.Advance(10s);
  EXPECT_TRUE(w.Check());
}

TEST(HangWatchdogTest, TheWarmUpStepIsNoDuration) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 200ms, 3, /*warmup=*/100s);
  clock.Advance(2s);
  auto v = w.Check();
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->median_seconds, 0.2);
}

TEST(HangWatchdogTest, OnlyTheLastWindowOfStepsCounts) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s, /*window=*/4), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 10s, 4);
  for (int i = 0; i < 4; ++i) {
    clock.Advance(200ms);
    w.Committed(++step);
  }
  clock.Advance(2s);  // 10 x 0.2 s: the 10 s steps are out of the window
  EXPECT_TRUE(w.Check());
}

TEST(HangWatchdogTest, OneVerdictPerResetAndResetForgetsTheSteps) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 100ms, 5);
  clock.Advance(5s);
  EXPECT_TRUE(w.Check());
  EXPECT_FALSE(w.Check());  // the rebuild that follows is not judged again
  clock.Advance(1h);
  EXPECT_FALSE(w.Check());
  w.Reset(0);  // the next generation: its own steps, none yet
  clock.Advance(1h);
  EXPECT_FALSE(w.Check());
  Train(w, clock, 2s, 3);
  clock.Advance(19s);
  EXPECT_FALSE(w.Check());
  clock.Advance(1s);
  auto v = w.Check();
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->median_seconds, 2.0);
  EXPECT_EQ(v->steps, 3);
}

TEST(HangWatchdogTest, ACommitEndsTheStall) {
  FakeClock clock;
  HangWatchdog w(Options(10, 1s), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 100ms, 5);
  clock.Advance(900ms);
  w.Committed(++step);  // a slow step, but it committed
  clock.Advance(900ms);
  EXPECT_FALSE(w.Check());
}

// The checker stopped with its process (SIGSTOP, a paused VM): the time it did not run is no stall of the
// generation's. A stall it watches throughout still is.
TEST(HangWatchdogTest, TimeTheCheckerDidNotRunIsNoStall) {
  FakeClock clock;
  HangWatchdogOptions o = Options(10, 1s);
  o.check_gap = 1s;
  HangWatchdog w(o, [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 100ms, 5);
  EXPECT_FALSE(w.Check());
  clock.Advance(4s);  // stopped: no Check for 4 s
  EXPECT_FALSE(w.Check());
  for (int i = 0; i < 9; ++i) {
    clock.Advance(100ms);
    EXPECT_FALSE(w.Check()) << i;  // 0.9 s of stall watched: below the floor
  }
  clock.Advance(100ms);
  auto v = w.Check();
  ASSERT_TRUE(v);
  EXPECT_NEAR(v->stalled_seconds, 1.0, 1e-9);
}

TEST(HangWatchdogTest, AFactorOfZeroTurnsItOff) {
  FakeClock clock;
  HangWatchdog w(Options(0, 1s), [&] { return clock.t; });
  w.Reset(0);
  Train(w, clock, 100ms, 10);
  clock.Advance(24h);
  EXPECT_FALSE(w.Check());
}

}  // namespace
}  // namespace ringmaster::elastic
