// DeletedPods: the worker pods this operator deleted, kept until its informer cache shows them deleting
// (a deletionTimestamp) or gone -- client-go's UIDTrackingControllerExpectations for deletions. A reconcile
// that runs before the watch has brought a deletion back would otherwise see the pod as it was: Ready, not
// deleting, and able to join again. Seen on real kubelets: the peers report a silent worker, the operator
// publishes a generation without it and deletes its pod, and 60 ms later, from a cache that still showed
// the pod Ready, published another generation with the same pod (same uid) back in.
// With it, Observe overlays the deletion on the cached pod: the planner sees what the apiserver already
// holds, so reconcile stays level-based on the freshest known state, never on an intention.
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringmaster::controller {

class DeletedPods {
 public:
  // The operator's delete of pod `uid` of job `job_key` ("ns/name") succeeded at `when`.
  void Deleted(const std::string& job_key, const std::string& uid, std::chrono::system_clock::time_point when);
  // Overlays the recorded deletions on `pods` (job_key's pods as the cache holds them): a recorded pod
  // the cache still shows undeleted gets metadata.deletionTimestamp = the time of the delete (and
  // deletionGracePeriodSeconds 0: the deletion began then). A record is
  // dropped once the cache shows the pod deleting or no longer holds it.
  void Overlay(const std::string& job_key, std::vector<nlohmann::json>* pods);
  // Drops the records of a job that is gone.
  void Forget(const std::string& job_key);
  size_t size() const;  // records kept, over all jobs

 private:
  mutable std::mutex mu_;
  // job key -> pod uid -> when the delete succeeded. Guarded by mu_.
  std::map<std::string, std::map<std::string, std::chrono::system_clock::time_point>> deleted_;
};

}  // namespace ringmaster::controller
