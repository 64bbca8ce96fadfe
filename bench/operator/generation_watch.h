// GenerationWatch: a client that watches the TrainingJobs of one namespace (kube::Informer, the same
// client a worker uses to follow its job) and timestamps every membership generation the moment its
// watch event arrives. It answers the bench's two questions: when did every job first publish a
// membership of `world_size` workers, and how long after an instant (a pod's failure) did a job's
// next generation arrive. Test support only.
// Thread-safety: thread-safe. Ownership: shares the client.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "bench/operator/bench_figures.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace ringmaster::bench {

class GenerationWatch {
 public:
  GenerationWatch(std::shared_ptr<kube::Client> client, const std::string& ns, int world_size);
  ~GenerationWatch();

  // Starts the watch; DeadlineExceeded when its first list does not arrive in 60 s.
  Status Start();
  // Jobs that have published a membership of world_size workers at least once.
  size_t published() const;
  // When the `count`-th job first published a full membership (nullopt: not yet).
  std::optional<Clock::time_point> published_at(size_t count) const;

  struct Membership {
    int64_t generation = 0;
    int64_t world_size = 0;
    std::string last_pod;  // the pod of the highest rank
  };
  // The newest membership of `job` the watch has seen (generation 0 when none).
  Membership Current(const std::string& job) const;
  // Waits until a generation above `after` of `job` arrives (one already seen counts), up to `timeout`.
  // Returns when that event arrived; nullopt on timeout.
  std::optional<Clock::time_point> WaitForGeneration(const std::string& job, int64_t after,
                                                     std::chrono::milliseconds timeout) const;

 private:
  void Note(const nlohmann::json& job);

  const int world_size_;
  std::unique_ptr<kube::Informer> informer_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  // Guarded by mu_.
  std::map<std::string, Membership> current_;
  std::map<std::string, std::map<int64_t, Clock::time_point>> arrived_;  // job -> generation -> arrival
  std::set<std::string> published_;
  std::vector<Clock::time_point> published_at_;  // the i-th full membership's arrival
};

}  // namespace ringmaster::bench
