#include "bench/operator/generation_watch.h"

#include "base/json_path.h"
#include "kube/resource.h"
#include "operator/controller/reconciler.h"

namespace ringmaster::bench {

GenerationWatch::GenerationWatch(std::shared_ptr<kube::Client> client, const std::string& ns, int world_size)
    : world_size_(world_size) {
  kube::InformerOptions o;
  o.ns = ns;
  o.transform = kube::StripManagedFields;
  o.log = [](LogLevel, std::string_view) {};
  informer_ = std::make_unique<kube::Informer>(std::move(client), controller::TrainingJobs(), o);
  informer_->AddEventHandler({[this](const nlohmann::json& j) { Note(j); },
                              [this](const nlohmann::json&, const nlohmann::json& j) { Note(j); }, nullptr});
}

GenerationWatch::~GenerationWatch() { informer_->Stop(); }

Status GenerationWatch::Start() {
  informer_->Start();
  if (!informer_->WaitForSync(std::chrono::seconds(60)))
    return DeadlineExceededError("the TrainingJob watch did not sync");
  return Status::Ok();
}

void GenerationWatch::Note(const nlohmann::json& job) {
  auto now = Clock::now();
  const std::string name = kube::NameOf(job);
  const nlohmann::json* m = nullptr;
  if (job.contains("status") && job["status"].contains("membership")) m = &job["status"]["membership"];
  if (!m) return;
  Membership seen;
  seen.generation = IntAt(*m, {"generation"});
  seen.world_size = IntAt(*m, {"worldSize"});
  const auto& members = ArrayAt(*m, {"members"});
  if (!members.empty()) seen.last_pod = StringAt(members.back(), {"pod"});
  {
    std::lock_guard<std::mutex> lock(mu_);
    Membership& cur = current_[name];
    if (seen.generation <= cur.generation) return;
    cur = seen;
    arrived_[name].emplace(seen.generation, now);
    if (seen.world_size == world_size_ && published_.insert(name).second) published_at_.push_back(now);
  }
  cv_.notify_all();
}

size_t GenerationWatch::published() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_.size();
}

std::optional<Clock::time_point> GenerationWatch::published_at(size_t count) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (count == 0 || count > published_at_.size()) return std::nullopt;
  return published_at_[count - 1];
}

GenerationWatch::Membership GenerationWatch::Current(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = current_.find(job);
  return it == current_.end() ? Membership{} : it->second;
}

std::optional<Clock::time_point> GenerationWatch::WaitForGeneration(const std::string& job, int64_t after,
                                                                    std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<Clock::time_point> at;
  cv_.wait_for(lock, timeout, [&] {
    auto it = arrived_.find(job);
    if (it == arrived_.end()) return false;
    auto g = it->second.upper_bound(after);
    if (g == it->second.end()) return false;
    at = g->second;
    return true;
  });
  return at;
}

}  // namespace ringmaster::bench
