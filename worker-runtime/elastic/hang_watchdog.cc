#include "worker-runtime/elastic/hang_watchdog.h"

#include <algorithm>
#include <vector>

namespace ringmaster::elastic {

HangWatchdog::HangWatchdog(HangWatchdogOptions options, std::function<Clock::time_point()> now)
    : options_(options), now_(std::move(now)) {}

void HangWatchdog::Reset(int64_t step) {
  std::lock_guard lock(mu_);
  started_ = true;
  tripped_ = false;
  committed_ = false;
  last_ = now_();
  checked_ = Clock::time_point{};
  step_ = step;
  durations_.clear();
}

void HangWatchdog::Committed(int64_t step) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = now_();
  if (started_ && committed_) {  // the first commit after a Reset ends the warm-up step: not a duration
    durations_.push_back(std::chrono::duration<double>(now - last_).count());
    while (static_cast<int>(durations_.size()) > std::max(options_.window, 1)) durations_.pop_front();
  }
  committed_ = true;
  last_ = now;
  step_ = step;
}

double HangWatchdog::MedianLocked() const {
  std::vector<double> sorted(durations_.begin(), durations_.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

std::optional<HangVerdict> HangWatchdog::Check() {
  std::lock_guard lock(mu_);
  const Clock::time_point now = now_();
  const Clock::time_point checked = checked_;
  checked_ = now;
  // The checker did not run for a while: that time is this process's own pause, not the generation's stall.
  if (started_ && options_.check_gap.count() > 0 && checked != Clock::time_point{} &&
      now - checked > options_.check_gap && last_ < now) {
    last_ = std::min(now, last_ + (now - checked));
  }
  if (options_.factor <= 0 || !started_ || tripped_ || durations_.empty() ||
      static_cast<int>(durations_.size()) < options_.min_steps) {
    return std::nullopt;
  }
  HangVerdict v;
  v.steps = static_cast<int>(durations_.size());
  v.step = step_;
  v.median_seconds = MedianLocked();
  v.limit_seconds = std::max(options_.factor * v.median_seconds, std::chrono::duration<double>(options_.floor).count());
  v.stalled_seconds = std::chrono::duration<double>(now - last_).count();
  if (v.stalled_seconds < v.limit_seconds) return std::nullopt;
  tripped_ = true;
  return v;
}

}  // namespace ringmaster::elastic
