#include "bench/operator/pod_milestones.h"

#include "base/json_path.h"
#include "kube/resource.h"

namespace ringmaster::bench {

PodMilestones::PodMilestones(std::shared_ptr<kube::Client> client, const std::string& ns, size_t target)
    : target_(target) {
  kube::InformerOptions o;
  o.ns = ns;
  o.transform = kube::StripManagedFields;
  o.log = [](LogLevel, std::string_view) {};
  informer_ = std::make_unique<kube::Informer>(std::move(client), kube::resources::Pods(), o);
  informer_->AddEventHandler({[this](const nlohmann::json& p) { Note(p); },
                              [this](const nlohmann::json&, const nlohmann::json& p) { Note(p); }, nullptr});
}

PodMilestones::~PodMilestones() { informer_->Stop(); }

Status PodMilestones::Start() {
  informer_->Start();
  if (!informer_->WaitForSync(std::chrono::seconds(60))) return DeadlineExceededError("the pod watch did not sync");
  return Status::Ok();
}

void PodMilestones::Note(const nlohmann::json& pod) {
  auto now = Clock::now();
  std::string key = kube::KeyOf(pod);
  const std::string phase = StringAt(pod, {"status", "phase"});
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (created_.insert(key).second && created_.size() == target_) all_created_ = now;
    if (phase == "Running" && running_.insert(key).second && running_.size() == target_) all_running_ = now;
    // By uid: a replacement pod takes its predecessor's name, and may fail in turn.
    if (phase != "Failed" || !failed_.emplace(StringAt(pod, {"metadata", "uid"}), now).second) return;
  }
  cv_.notify_all();
}

std::optional<Clock::time_point> PodMilestones::WaitForFailed(const std::string& uid,
                                                              std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<Clock::time_point> at;
  cv_.wait_for(lock, timeout, [&] {
    auto it = failed_.find(uid);
    if (it != failed_.end()) at = it->second;
    return at.has_value();
  });
  return at;
}

size_t PodMilestones::created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_.size();
}
size_t PodMilestones::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_.size();
}
std::optional<Clock::time_point> PodMilestones::all_created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_created_;
}
std::optional<Clock::time_point> PodMilestones::all_running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_running_;
}

}  // namespace ringmaster::bench
