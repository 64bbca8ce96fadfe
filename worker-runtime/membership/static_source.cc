#include "worker-runtime/membership/static_source.h"

namespace ringmaster::membership {

StatusOr<api::Membership> StaticMembershipSource::WaitNewer(int64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (stopped_) return CancelledError("membership source stopped");
  if (record_.generation > after) return record_;
  if (cv_.wait_for(lock, timeout, [&] { return stopped_; })) return CancelledError("membership source stopped");
  return DeadlineExceededError("no membership newer than generation " + std::to_string(after));
}

void StaticMembershipSource::Stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

}  // namespace ringmaster::membership
