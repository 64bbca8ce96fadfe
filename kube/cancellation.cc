#include "kube/cancellation.h"

#include <utility>

namespace ringmaster::kube {

Cancellation::Registration::Registration(Registration&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

Cancellation::Registration& Cancellation::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Cancellation::Registration::~Registration() { Reset(); }

void Cancellation::Registration::Reset() {
  if (owner_ == nullptr) return;
  // Taking the lock waits out a Cancel() running this very callback (callbacks run under it).
  std::lock_guard<std::mutex> lock(owner_->mu_);
  owner_->callbacks_.erase(id_);
  owner_ = nullptr;
}

void Cancellation::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  cv_.notify_all();
  // Under the lock, so that a Registration destroyed meanwhile waits until its callback is done with what the
  // callback points at.
  for (auto& [id, fn] : callbacks_) fn();
  callbacks_.clear();
}

bool Cancellation::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool Cancellation::SleepFor(std::chrono::nanoseconds d) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (d > std::chrono::nanoseconds::zero()) cv_.wait_for(lock, d, [this] { return cancelled_; });
  return !cancelled_;
}

Cancellation::Registration Cancellation::OnCancel(std::function<void()> fn) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cancelled_) {
    lock.unlock();
    fn();
    return Registration();
  }
  const uint64_t id = ++next_id_;
  callbacks_.emplace(id, std::move(fn));
  return Registration(this, id);
}

}  // namespace ringmaster::kube
