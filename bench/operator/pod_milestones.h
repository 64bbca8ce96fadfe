// PodMilestones: watches the pods of one namespace (kube::Informer, the operator's own client) and
// notes when the count of pods ever created, and of pods ever Running, first reaches a target — the
// "apply -> all worker pods created -> all Running" figures, for any operator's pods. Times are taken
// when the watch event arrives. It also times each pod's Failed phase (the failure as any watcher,
// the operator included, first sees it). Test support only.
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

class PodMilestones {
 public:
  // Watches pods in `ns` until destroyed; `target` pods make "all".
  PodMilestones(std::shared_ptr<kube::Client> client, const std::string& ns, size_t target);
  ~PodMilestones();

  // Starts the watch; DeadlineExceeded when its first list does not arrive in 60 s.
  Status Start();
  size_t created() const;
  size_t running() const;
  // When the target was reached (nullopt: not yet).
  std::optional<Clock::time_point> all_created() const;
  std::optional<Clock::time_point> all_running() const;
  // Waits up to `timeout` for the phase Failed of the pod with `uid` to arrive; returns when it arrived.
  std::optional<Clock::time_point> WaitForFailed(const std::string& uid, std::chrono::milliseconds timeout) const;

 private:
  void Note(const nlohmann::json& pod);

  const size_t target_;
  std::unique_ptr<kube::Informer> informer_;
  mutable std::mutex mu_;
  // Guarded by mu_.
  std::set<std::string> created_, running_;
  std::optional<Clock::time_point> all_created_, all_running_;
  std::map<std::string, Clock::time_point> failed_;  // pod uid -> when its Failed phase arrived
  mutable std::condition_variable cv_;
};

}  // namespace ringmaster::bench
