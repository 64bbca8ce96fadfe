#include "kube/workqueue.h"

#include "kube/client_metrics.h"

namespace ringmaster::kube {

namespace {
double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

WorkQueue::WorkQueue(WorkQueueOptions options)
    : name_(options.name),
      rate_limiter_(options.rate_limiter ? std::move(options.rate_limiter) : DefaultControllerRateLimiter()),
      metrics_(std::move(options.metrics)) {
  // Every series exists at 0 from the start, as controller-runtime's do: a dashboard of an idle operator reads 0,
  // not "no data".
  if (metrics_) {
    metrics_->QueueDepth(name_).Set(0);
    metrics_->QueueAdds(name_);
    metrics_->QueueLatency(name_);
    metrics_->WorkDuration(name_);
    metrics_->QueueRetries(name_);
  }
  delay_thread_ = std::thread([this] { DelayLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (delay_thread_.joinable()) delay_thread_.join();
}

void WorkQueue::UpdateDepthLocked() {
  if (metrics_) metrics_->QueueDepth(name_).Set(static_cast<double>(queued_));
}

void WorkQueue::EnqueueLocked(const std::string& key, Pending& pending) {
  pending.seq = ++next_seq_;
  lanes_[pending.lane].emplace_back(key, pending.seq);
  ++queued_;
  UpdateDepthLocked();
  cv_.notify_one();
}

void WorkQueue::AddLocked(const std::string& key, Lane lane) {
  if (shutting_down_) return;
  if (metrics_) metrics_->QueueAdds(name_).Increment();
  if (auto it = dirty_.find(key); it != dirty_.end()) {
    Pending& pending = it->second;
    if (lane < pending.lane) {  // raised: its entry in the lower lane goes stale
      pending.lane = lane;
      if (pending.seq != 0) {
        --queued_;
        EnqueueLocked(key, pending);
      }
    }
    return;
  }
  Pending& pending = dirty_.emplace(key, Pending{lane, 0}).first->second;
  added_at_.emplace(key, std::chrono::steady_clock::now());
  if (processing_.count(key)) return;  // re-queued by Done()
  EnqueueLocked(key, pending);
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key, kNormal);
}

void WorkQueue::AddHighPriority(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key, kHigh);
}

void WorkQueue::AddLowPriority(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key, kLow);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  if (delay <= Duration::zero()) {
    AddLocked(key, kNormal);
    return;
  }
  TimePoint ready = std::chrono::steady_clock::now() + delay;
  auto it = delayed_at_.find(key);
  if (it != delayed_at_.end()) {
    if (it->second <= ready) return;  // already due sooner
    auto range = delayed_.equal_range(it->second);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == key) {
        delayed_.erase(d);
        break;
      }
    }
  }
  delayed_at_[key] = ready;
  delayed_.emplace(ready, key);
  delay_cv_.notify_one();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  if (metrics_) metrics_->QueueRetries(name_).Increment();
  AddAfter(key, rate_limiter_->When(key));
}

void WorkQueue::Forget(const std::string& key) { rate_limiter_->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) { return rate_limiter_->NumRequeues(key); }

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queued_ > 0 || shutting_down_; });
  if (queued_ == 0) return std::nullopt;
  std::string key;
  bool found = false;
  for (auto& lane : lanes_) {
    while (!found && !lane.empty()) {
      auto [candidate, seq] = std::move(lane.front());
      lane.pop_front();
      auto it = dirty_.find(candidate);
      if (it == dirty_.end() || it->second.seq != seq) continue;  // stale: raised to the normal lane
      dirty_.erase(it);
      key = std::move(candidate);
      found = true;
    }
  }
  --queued_;
  processing_.insert(key);
  const auto now = std::chrono::steady_clock::now();
  if (auto it = added_at_.find(key); it != added_at_.end()) {
    if (metrics_) metrics_->QueueLatency(name_).Observe(Seconds(now - it->second));
    added_at_.erase(it);
  }
  started_at_[key] = now;
  UpdateDepthLocked();
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (processing_.erase(key) == 0) return;
  if (auto it = started_at_.find(key); it != started_at_.end()) {
    if (metrics_) metrics_->WorkDuration(name_).Observe(Seconds(std::chrono::steady_clock::now() - it->second));
    started_at_.erase(it);
  }
  if (auto it = dirty_.find(key); it != dirty_.end()) EnqueueLocked(key, it->second);
  if (processing_.empty()) cv_.notify_all();  // ShutDownWithDrain
}

size_t WorkQueue::Len() {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
  delay_cv_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  drain_ = true;
  cv_.notify_all();
  delay_cv_.notify_all();
  cv_.wait(lock, [this] { return processing_.empty(); });
}

size_t WorkQueue::ShutDownWithDrain(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  drain_ = true;
  cv_.notify_all();
  delay_cv_.notify_all();
  if (cv_.wait_for(lock, timeout, [this] { return processing_.empty(); })) return 0;
  // Abandoned: nothing more is handed out (the workers still holding keys will find Get() empty).
  for (auto& lane : lanes_) lane.clear();
  dirty_.clear();
  added_at_.clear();
  queued_ = 0;
  UpdateDepthLocked();
  return processing_.size();
}

bool WorkQueue::ShuttingDown() {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_;
}

void WorkQueue::DelayLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutting_down_) {
    if (delayed_.empty()) {
      delay_cv_.wait(lock);
      continue;
    }
    auto first = delayed_.begin();
    if (first->first > std::chrono::steady_clock::now()) {
      delay_cv_.wait_until(lock, first->first);
      continue;
    }
    std::string key = first->second;
    delayed_.erase(first);
    delayed_at_.erase(key);
    AddLocked(key, kNormal);
  }
}

}  // namespace ringmaster::kube
