// EventRecorder: records core/v1 Events about objects, aggregated and rate limited like client-go's
// recorder, so a crash loop cannot flood the apiserver.
//
// Aggregation: an event identical to an earlier one (same object, type, reason, message, component)
// bumps count and lastTimestamp on the existing Event (a PATCH) instead of creating a new object.
// Rate limit: a token bucket per involved object (burst, then qps); events over it are dropped and
// counted. Recording never blocks the caller: events go through a bounded queue to one writer thread
// (events beyond the queue are dropped too).
// Thread-safety: thread-safe. Ownership: shares the Client; the destructor flushes briefly and stops.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "kube/client.h"
#include "kube/rate_limiter.h"

namespace ringmaster::kube {

struct EventRecorderOptions {
  std::string component = "ringmaster-operator";
  std::string host;                   // source.host / reportingInstance
  double qps_per_object = 1.0 / 300;  // client-go's spam filter: 1 per 5 minutes...
  int burst_per_object = 25;          // ...after a burst of 25
  size_t queue_size = 1000;
  size_t cache_size = 4096;  // aggregation entries (LRU) and per-object limiters remembered
  // A write that fails with a retryable code (Unavailable: the apiserver restarting, a stale connection) is
  // tried again, up to max_tries in all, waiting retry_initial, then twice as long each time up to retry_max,
  // as client-go's recorder does (12 tries, 10 s apart); meanwhile later events wait in the queue.
  int max_tries = 12;
  Duration retry_initial = std::chrono::milliseconds(200);
  Duration retry_max = std::chrono::seconds(10);
  LogSink log = StderrLogSink("ringmaster-kube");
};

class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<Client> client, EventRecorderOptions options);
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Records an event about `object` (which needs apiVersion, kind, metadata.name; namespace and uid
  // when it has them). `type` is "Normal" or "Warning". Never blocks on the apiserver.
  void Event(const json& object, const std::string& type, const std::string& reason, const std::string& message);
  // Waits until every queued event was written (or `timeout` passed); true when drained.
  bool Flush(Duration timeout);
  int64_t dropped() const { return dropped_.load(); }
  int64_t written() const { return written_.load(); }

 private:
  struct Pending {
    json involved;  // ObjectReference
    std::string ns, type, reason, message;
  };
  // Aggregates are found by two independent 64-bit hashes of what makes events the same (involved object, type,
  // reason, message), not by that text: at 4,096 entries the text (an ObjectReference and a message, twice:
  // map and LRU) held about 4 MB. `id` is the map's key; `check` must match too, or it is a different event.
  struct Aggregate {
    std::string name;  // the Event object's name
    int64_t count = 0;
    uint64_t check = 0;
    std::list<uint64_t>::iterator lru;
  };
  void Loop();
  void Write(const Pending& e);
  // Calls `write` until it succeeds, fails with a code that is not retryable, max_tries are spent, or the
  // recorder stops (waiting between tries on cv_, so the destructor never waits out a backoff).
  template <typename Fn>
  auto WithRetries(Fn write) -> decltype(write());

  // Constant after construction.
  const std::shared_ptr<Client> client_;
  const EventRecorderOptions options_;

  std::atomic<int64_t> dropped_{0}, written_{0};
  // Guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_, drained_cv_;
  std::deque<Pending> queue_;
  bool writing_ = false;
  bool stopping_ = false;
  std::unordered_map<std::string, std::unique_ptr<TokenBucket>> limiters_;  // per involved object
  // Used only by the writer thread.
  std::unordered_map<uint64_t, Aggregate> aggregates_;  // by the first hash (see Aggregate)
  std::list<uint64_t> lru_;
  std::thread thread_;
};

}  // namespace ringmaster::kube
