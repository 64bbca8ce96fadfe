#include "operator/controller/deleted_pods.h"

#include "base/time_format.h"

namespace ringmaster::controller {

void DeletedPods::Deleted(const std::string& job_key, const std::string& uid,
                          std::chrono::system_clock::time_point when) {
  std::lock_guard lock(mu_);
  deleted_[job_key].emplace(uid, when);  // a repeated delete keeps the first time
}

void DeletedPods::Overlay(const std::string& job_key, std::vector<nlohmann::json>* pods) {
  std::lock_guard lock(mu_);
  auto job = deleted_.find(job_key);
  if (job == deleted_.end()) return;
  std::map<std::string, std::chrono::system_clock::time_point> pending;
  for (auto& pod : *pods) {
    if (!pod.contains("metadata") || !pod["metadata"].is_object()) continue;
    nlohmann::json& meta = pod["metadata"];
    auto it = job->second.find(meta.value("uid", ""));
    if (it == job->second.end() || meta.contains("deletionTimestamp")) continue;  // not ours, or seen
    // The deletion's start (deletionTimestamp less deletionGracePeriodSeconds, as job_plan.cc reads them).
    meta["deletionTimestamp"] = FormatRfc3339(it->second);
    meta["deletionGracePeriodSeconds"] = 0;
    pending.insert(*it);
  }
  // What the loop did not keep is deleting in the cache, or gone from it: nothing left to wait for.
  if (pending.empty()) {
    deleted_.erase(job);
  } else {
    job->second = std::move(pending);
  }
}

void DeletedPods::Forget(const std::string& job_key) {
  std::lock_guard lock(mu_);
  deleted_.erase(job_key);
}

size_t DeletedPods::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [job, uids] : deleted_) n += uids.size();
  return n;
}

}  // namespace ringmaster::controller
