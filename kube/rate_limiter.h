// Rate limiters, with client-go's semantics.
//
// TokenBucket: client-side QPS/burst flow control (flowcontrol.NewTokenBucketRateLimiter).
// RateLimiter: the per-item limiters a workqueue uses to decide how long a failed key waits
// (workqueue.TypedRateLimiter): exponential per-item backoff, an overall bucket, and the max of several.
//
// Thread-safety: every class here is thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/cancellation.h"

namespace ringmaster::kube {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;
// A source of "now"; a seam so tests can drive time. Must be thread-safe.
using NowFn = std::function<TimePoint()>;
NowFn SteadyNow();

class TokenBucket {
 public:
  // `qps` tokens per second are added, up to `burst`; the bucket starts full. qps <= 0 disables limiting.
  TokenBucket(double qps, int burst, NowFn now = SteadyNow());
  // Takes a token and returns how long the caller must wait before using it (0 when one was there).
  // Reservations queue: each caller gets a distinct future slot.
  Duration Reserve();
  // Takes a token only if one is available now.
  bool TryAccept();
  // Reserve() then sleep.
  void Accept();
  // Reserve() then sleep, less when `cancel` is tripped meanwhile. False when cancelled (before or during the
  // wait); the token stays taken.
  [[nodiscard]] bool Accept(const Cancellation& cancel);

 private:
  void RefillLocked(TimePoint now);
  // Constant after construction.
  const double qps_;
  const double burst_;
  const NowFn now_;
  // Guarded by mu_.
  std::mutex mu_;
  double tokens_;
  TimePoint last_;
};

// How long an item should wait before being retried (workqueue rate limiter).
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // Records a failure of `item` and returns how long it must wait.
  virtual Duration When(const std::string& item) = 0;
  // The item succeeded: stop tracking its failures.
  virtual void Forget(const std::string& item) = 0;
  // How many failures of `item` are being tracked.
  virtual int NumRequeues(const std::string& item) = 0;
};

// base * 2^failures, capped at max_delay.
class ItemExponentialFailureRateLimiter : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(Duration base_delay, Duration max_delay);
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const Duration base_, max_;
  std::mutex mu_;
  std::map<std::string, int> failures_;  // guarded by mu_
};

// An overall token bucket: every When() takes a token.
class BucketRateLimiter : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, NowFn now = SteadyNow());
  Duration When(const std::string& item) override;
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  TokenBucket bucket_;
};

// The longest wait of its members (all of them record the failure).
class MaxOfRateLimiter : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// client-go's DefaultControllerRateLimiter: max(5ms*2^n capped at 1000s, 10 qps / burst 100 bucket).
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(NowFn now = SteadyNow());

}  // namespace ringmaster::kube
