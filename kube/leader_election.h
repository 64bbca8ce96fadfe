// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.
//
// A candidate acquires the Lease when it is absent, released (no holder) or expired — expiry judged
// by the candidate's own clock from when it last saw the record change (observedTime +
// leaseDuration), never by comparing clocks across machines. The leader renews every retry_period;
// if it cannot renew for renew_deadline it stops leading (on_stopped_leading). Stop() ends Run(); a
// leader then releases the Lease (empty holder) when release_on_cancel, so a successor need not wait
// for expiry. Optimistic concurrency (resourceVersion) makes concurrent acquisitions safe.
//
// Callbacks run on the thread calling Run() and must return quickly (start work elsewhere).
// Errors: apiserver failures are retried every retry_period and logged; Run() returns nothing.
// Thread-safety: Run() on one thread; Stop(), IsLeader(), GetLeader() from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kube/client.h"

namespace ringmaster::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate, e.g. pod name + random suffix
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  bool release_on_cancel = true;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;  // any observed holder change
  LogSink log = StderrLogSink("ringmaster-kube");
};

class LeaderElector {
 public:
  // kInvalidArgument unless lease_duration > renew_deadline > retry_period > 0 and names are set.
  static StatusOr<std::unique_ptr<LeaderElector>> Create(std::shared_ptr<Client> client, LeaderElectionConfig config);

  // Acquires (retrying until Stop()), leads until renewal fails or Stop(), then returns.
  void Run();
  void Stop();
  bool IsLeader() const { return leading_.load(); }
  std::string GetLeader() const;

 private:
  LeaderElector(std::shared_ptr<Client> client, LeaderElectionConfig config);
  // One attempt; true when we hold the lease afterwards.
  bool TryAcquireOrRenew();
  void Release();
  // Sleeps up to `d`; false when stopping.
  bool Sleep(Duration d);

  // Constant after construction.
  const std::shared_ptr<Client> client_;
  const LeaderElectionConfig config_;

  std::atomic<bool> leading_{false};
  // Guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  json observed_spec_;  // the lease spec as last seen
  std::string observed_rv_;
  TimePoint observed_time_{};  // when observed_spec_ last changed (our clock)
  std::string leader_;         // holder as last seen
};

}  // namespace ringmaster::kube
