#include "worker-runtime/fusion/request.h"

namespace ringmaster::fusion {

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce: return "allreduce";
    case CollectiveKind::kAllgather: return "allgather";
    case CollectiveKind::kAllgatherv: return "allgatherv";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kAlltoall: return "alltoall";
    case CollectiveKind::kBarrier: return "barrier";
  }
  return "?";
}

void Completion::Finish(Status status) {
  std::vector<std::function<void(const Status&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    status_ = std::move(status);
    callbacks.swap(on_done_);
  }
  cv_.notify_all();
  // status_ is never written again once done_ is set, so reading it unlocked here is safe.
  for (auto& fn : callbacks) fn(status_);
}

void Completion::OnDone(std::function<void(const Status&)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      on_done_.push_back(std::move(fn));
      return;
    }
  }
  fn(status_);
}

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Completion::OnFirstWait(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  on_first_wait_ = std::move(wake);
}

Status Completion::Wait(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (!done_ && !awaited_.load(std::memory_order_relaxed)) {
    awaited_.store(true, std::memory_order_release);
    std::function<void()> wake = std::move(on_first_wait_);
    on_first_wait_ = nullptr;
    if (wake) {
      lock.unlock();  // the hook takes the engine's lock, which is never held while this one is taken
      wake();
      lock.lock();
    }
  }
  if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
    return DeadlineExceededError("collective still running after " + std::to_string(timeout.count()) + " ms");
  }
  return status_;
}

uint64_t Request::Fingerprint() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(name.data(), name.size());
  uint64_t fields[] = {static_cast<uint64_t>(kind), static_cast<uint64_t>(type), static_cast<uint64_t>(op), count,
                       static_cast<uint64_t>(root), static_cast<uint64_t>(host)};
  mix(fields, sizeof fields);
  if (!counts.empty()) mix(counts.data(), counts.size() * sizeof(size_t));
  return h;
}

std::string Request::Describe() const {
  std::string d = "'" + name + "' (" + std::string(CollectiveKindName(kind)) + " " +
                  std::string(common::DataTypeName(type)) + " x" + std::to_string(count);
  if (kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReduceScatter) {
    d += " " + std::string(common::ReduceOpName(op));
  }
  return d + (host ? ", host memory)" : ")");
}

}  // namespace ringmaster::fusion
