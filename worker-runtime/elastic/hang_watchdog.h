// HangWatchdog: tells a member that its generation is hung -- a collective that neither fails nor completes (a
// peer whose NVLink died gives no asynchronous error, a rank that never submits the collective its peers wait in)
// -- long before the collective timeout would (RuntimeConfig::timeout, ElasticOptions::rebuild_timeout), by
// watching step progress as NVIDIA's resiliency extension, DLRover and SageMaker HyperPod do.
//
// It is fed the time of every committed step (Committed) and keeps the durations of the last `window` steps
// (commit to commit; the first step after Reset, its warm-up, is not one). The member is hung when no step has
// committed for `factor` x the median of those durations and for at least `floor` (a checkpoint, an evaluation or
// a slow step that a program takes now and then must not trip it), once at least `min_steps` durations were
// seen since the last Reset (no verdict while a generation warms up). The driver resets it whenever a generation
// is joined, and a verdict is given once per Reset (the rebuild that follows must not see it again). A process that
// was itself stopped (SIGSTOP, a paused VM) does not judge its peers by the time it did not run (check_gap).
//
// Errors: none; a factor <= 0 turns the watchdog off (Check never answers).
// Thread-safety: thread-safe (the training thread commits, the driver's watcher checks). The clock is called
// under the watchdog's lock and must not call back into it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

namespace ringmaster::elastic {

struct HangWatchdogOptions {
  double factor = 10;                      // hung after factor x the median step without a commit; <= 0: off
  std::chrono::milliseconds floor{30000};  // ... and never sooner than this
  int window = 32;                         // the median is of the last `window` step durations
  int min_steps = 3;                       // no verdict before this many step durations since the last Reset
  // A gap longer than this between two Checks means the checker itself did not run (the process was stopped, its
  // VM paused, its threads starved): the gap is no stall of the generation's, and is not counted. 0: every gap
  // counts. The driver checks every 100 ms and sets 1 s.
  std::chrono::milliseconds check_gap{0};
};

// Why the watchdog says hung.
struct HangVerdict {
  double stalled_seconds = 0;  // since the last commit (or the Reset, before any)
  double median_seconds = 0;   // the median step duration
  double limit_seconds = 0;    // max(factor x median, floor): what stalled_seconds passed
  int steps = 0;               // step durations the median is of
  int64_t step = 0;            // the last step committed (or resumed from, before any commit)
};

class HangWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // `now` is the clock (tests inject a fake one); it must stay valid for the watchdog's lifetime.
  explicit HangWatchdog(HangWatchdogOptions options, std::function<Clock::time_point()> now = &Clock::now);

  // A generation was joined now, resuming after step `step`: forgets every step duration and arms the watchdog
  // again.
  void Reset(int64_t step);
  // Step `step` committed now.
  void Committed(int64_t step);
  // The verdict when the member is hung now (see the top of this file), at most once per Reset; nullopt
  // otherwise. Never blocks beyond the lock.
  std::optional<HangVerdict> Check();

  const HangWatchdogOptions& options() const { return options_; }

 private:
  double MedianLocked() const;

  // Constant after construction.
  const HangWatchdogOptions options_;
  const std::function<Clock::time_point()> now_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  bool started_ = false;          // Reset was called (nothing is judged before)
  bool tripped_ = false;          // a verdict was given since the last Reset
  bool committed_ = false;        // a step committed since the last Reset
  Clock::time_point last_{};      // the last commit, or the Reset before any (moved on by excused gaps)
  Clock::time_point checked_{};   // the last Check since the last Reset; none before the first
  int64_t step_ = 0;              // the step of last_
  std::deque<double> durations_;  // the last `window` step durations, oldest first
};

}  // namespace ringmaster::elastic
