// WorkQueue: client-go's rate-limited work queue of keys.
//
// Guarantees: a key is never handed to two workers at once (a key added while it is being processed
// is queued again when Done() is called); repeated adds of a waiting key collapse into one; keys come
// out in FIFO order. AddRateLimited() waits as long as the RateLimiter says (per-item exponential
// backoff combined with an overall token bucket by default); AddAfter() delays; Forget() resets an
// item's backoff. After ShutDown() adds are ignored and Get() hands out what is still queued, then
// returns nullopt; ShutDownWithDrain() additionally waits until every handed-out key is Done().
//
// Usage (a worker):
//   while (auto key = queue.Get()) { Status s = Reconcile(*key);
//     if (s.ok()) queue.Forget(*key); else queue.AddRateLimited(*key); queue.Done(*key); }
// Thread-safety: thread-safe. Owns one thread that moves delayed keys into the queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "kube/rate_limiter.h"

namespace ringmaster::kube {

class ClientMetrics;

struct WorkQueueOptions {
  std::string name = "default";               // metrics label
  std::unique_ptr<RateLimiter> rate_limiter;  // default: DefaultControllerRateLimiter()
  std::shared_ptr<ClientMetrics> metrics;     // optional
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  ~WorkQueue();  // ShutDown()s and joins the delay thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is available; nullopt once shut down and empty.
  std::optional<std::string> Get();
  // Marks `key` (from Get) as processed.
  void Done(const std::string& key);

  // Keys waiting (not processing, not delayed).
  size_t Len();
  void ShutDown();
  void ShutDownWithDrain();
  bool ShuttingDown();

 private:
  void AddLocked(const std::string& key);
  void DelayLoop();
  void UpdateDepthLocked();

  // Constant after construction.
  const std::string name_;
  const std::unique_ptr<RateLimiter> rate_limiter_;  // thread-safe
  const std::shared_ptr<ClientMetrics> metrics_;

  // Guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_;        // items queued, shutdown, processing drained
  std::condition_variable delay_cv_;  // delayed set changed
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  std::unordered_map<std::string, TimePoint> added_at_;    // for queue latency
  std::unordered_map<std::string, TimePoint> started_at_;  // for work duration
  std::multimap<TimePoint, std::string> delayed_;          // ready time → key
  std::unordered_map<std::string, TimePoint> delayed_at_;  // key → ready time (earliest wins)
  bool shutting_down_ = false;
  bool drain_ = false;

  std::thread delay_thread_;
};

}  // namespace ringmaster::kube
