#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace ringmaster::kube {

NowFn SteadyNow() {
  return [] { return std::chrono::steady_clock::now(); };
}

TokenBucket::TokenBucket(double qps, int burst, NowFn now)
    : qps_(qps), burst_(std::max(1, burst)), now_(std::move(now)), tokens_(burst_), last_(now_()) {}

void TokenBucket::RefillLocked(TimePoint now) {
  if (now > last_) {
    double secs = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + secs * qps_);
    last_ = now;
  }
}

Duration TokenBucket::Reserve() {
  if (qps_ <= 0) return Duration::zero();
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(now_());
  tokens_ -= 1;
  if (tokens_ >= 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

bool TokenBucket::TryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(now_());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void TokenBucket::Accept() {
  Duration d = Reserve();
  if (d > Duration::zero()) std::this_thread::sleep_for(d);
}

bool TokenBucket::Accept(const Cancellation& cancel) {
  if (cancel.cancelled()) return false;
  return cancel.SleepFor(Reserve());
}

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(Duration base_delay, Duration max_delay)
    : base_(base_delay), max_(max_delay) {}

Duration ItemExponentialFailureRateLimiter::When(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  int exp = failures_[item]++;
  double backoff = double(base_.count()) * std::pow(2.0, exp);
  if (backoff > double(max_.count())) return max_;
  return Duration(static_cast<Duration::rep>(backoff));
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, NowFn now) : bucket_(qps, burst, std::move(now)) {}

Duration BucketRateLimiter::When(const std::string&) { return bucket_.Reserve(); }

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

Duration MaxOfRateLimiter::When(const std::string& item) {
  Duration out = Duration::zero();
  for (const auto& l : limiters_) out = std::max(out, l->When(item));
  return out;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (const auto& l : limiters_) l->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int out = 0;
  for (const auto& l : limiters_) out = std::max(out, l->NumRequeues(item));
  return out;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(NowFn now) {
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(
      std::make_unique<ItemExponentialFailureRateLimiter>(std::chrono::milliseconds(5), std::chrono::seconds(1000)));
  v.push_back(std::make_unique<BucketRateLimiter>(10, 100, std::move(now)));
  return std::make_unique<MaxOfRateLimiter>(std::move(v));
}

}  // namespace ringmaster::kube
