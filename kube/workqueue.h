// WorkQueue: client-go's rate-limited work queue of keys.
//
// Guarantees: a key is never handed to two workers at once (a key added while it is being processed
// is queued again when Done() is called); repeated adds of a waiting key collapse into one; keys come
// out in FIFO order within a priority, in three lanes: AddHighPriority() before Add() before AddLowPriority()
// (controller-runtime's priority queue: a resync or an initial list must not make a real change wait behind
// thousands of routine keys, and news about running work -- a pod that failed or became Ready -- must not wait
// behind thousands of new jobs' first reconciles; adding a waiting key at a higher priority raises it, keeping
// one entry).
// AddRateLimited() waits as long as the RateLimiter says (per-item exponential
// backoff combined with an overall token bucket by default); AddAfter() delays; Forget() resets an
// item's backoff. After ShutDown() adds are ignored and Get() hands out what is still queued, then
// returns nullopt; ShutDownWithDrain() additionally waits until every handed-out key is Done() -- for at most a
// deadline when given one (controller-runtime's graceful shutdown timeout), after which the keys still waiting
// are dropped and Get() returns nullopt, so that a process shutting down ends whatever it was doing instead of
// starting more.
//
// Usage (a worker):
//   while (auto key = queue.Get()) { Status s = Reconcile(*key);
//     if (s.ok()) queue.Forget(*key); else queue.AddRateLimited(*key); queue.Done(*key); }
// Thread-safety: thread-safe. Owns one thread that moves delayed keys into the queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
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
  // Queues `key` ahead of every key added with Add() or AddLowPriority() (FIFO among high-priority keys).
  void AddHighPriority(const std::string& key);
  // Queues `key` behind every key added with Add() (FIFO among low-priority keys). A key already waiting, or
  // waiting to be requeued by Done(), keeps its priority.
  void AddLowPriority(const std::string& key);
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
  // ShutDown(), then waits until every key handed out is Done(), however long that takes.
  void ShutDownWithDrain();
  // ShutDown(), then waits until every key handed out is Done() or `timeout` has passed. Returns how many keys
  // were still being processed then (0: drained). On a timeout the keys still waiting are dropped: Get() returns
  // nullopt from then on, and the keys still processing may still be Done().
  size_t ShutDownWithDrain(Duration timeout);
  bool ShuttingDown();

 private:
  enum Lane { kHigh = 0, kNormal = 1, kLow = 2 };  // served in this order
  // A dirty key: its lane, and the sequence number of its live entry in that lane's deque (0 while it is
  // processing and not queued). Entries whose number differs are stale (left behind by a raise) and skipped.
  struct Pending {
    Lane lane;
    uint64_t seq;
  };
  void AddLocked(const std::string& key, Lane lane);
  void EnqueueLocked(const std::string& key, Pending& pending);
  void DelayLoop();
  void UpdateDepthLocked();

  // Constant after construction.
  const std::string name_;
  const std::unique_ptr<RateLimiter> rate_limiter_;  // thread-safe
  const std::shared_ptr<ClientMetrics> metrics_;

  // Guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_;                             // items queued, shutdown, processing drained
  std::condition_variable delay_cv_;                       // delayed set changed
  std::deque<std::pair<std::string, uint64_t>> lanes_[3];  // (key, seq) by Lane, FIFO
  std::unordered_map<std::string, Pending> dirty_;         // keys added and not yet handed out
  size_t queued_ = 0;                                      // live entries in lanes_
  uint64_t next_seq_ = 0;
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
