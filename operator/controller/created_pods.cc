#include "operator/controller/created_pods.h"

#include <algorithm>
#include <set>

#include "kube/client.h"

namespace ringmaster::controller {

void CreatedPods::Created(const std::string& job_key, const nlohmann::json& pod,
                          std::chrono::system_clock::time_point when) {
  const std::string uid = kube::UidOf(pod);
  if (uid.empty()) return;  // not an apiserver's answer: nothing the watch could bring back
  std::lock_guard lock(mu_);
  auto& records = created_[job_key];
  if (std::any_of(records.begin(), records.end(), [&uid](const Record& r) { return r.uid == uid; })) return;
  records.push_back({uid, kube::NameOf(pod), when, kube::PackedObject::Pack(pod, table_)});
}

void CreatedPods::Seen(const std::string& job_key, const std::string& uid) {
  std::lock_guard lock(mu_);
  auto job = created_.find(job_key);
  if (job == created_.end()) return;
  std::erase_if(job->second, [&uid](const Record& r) { return r.uid == uid; });
  if (job->second.empty()) created_.erase(job);
}

void CreatedPods::Overlay(const std::string& job_key, std::vector<nlohmann::json>* pods,
                          std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  auto job = created_.find(job_key);
  if (job == created_.end()) return;
  std::set<std::string> cached_uids, cached_names;
  for (const auto& pod : *pods) {
    cached_uids.insert(kube::UidOf(pod));
    cached_names.insert(kube::NameOf(pod));
  }
  std::erase_if(job->second, [&](const Record& r) { return cached_uids.count(r.uid) > 0 || now - r.when > kTimeout; });
  for (const auto& r : job->second) {
    if (cached_names.count(r.name) == 0) pods->push_back(*r.pod.Unpack(table_));
  }
  if (job->second.empty()) created_.erase(job);
}

bool CreatedPods::Pending(const std::string& job_key) const {
  std::lock_guard lock(mu_);
  return created_.count(job_key) > 0;
}

void CreatedPods::Forget(const std::string& job_key) {
  std::lock_guard lock(mu_);
  created_.erase(job_key);
}

size_t CreatedPods::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [job, records] : created_) n += records.size();
  return n;
}

}  // namespace ringmaster::controller
