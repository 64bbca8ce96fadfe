// StaticMembershipSource: one record that never changes — a program started on its own, outside any
// launcher or pod (`python train.py` on a laptop: a world of one), or a test that fixes the membership.
#pragma once

#include <condition_variable>
#include <mutex>

#include "worker-runtime/membership/membership_source.h"

namespace ringmaster::membership {

// Thread-safe.
class StaticMembershipSource : public MembershipSource {
 public:
  explicit StaticMembershipSource(api::Membership record) : record_(std::move(record)) {}

  // The record when after < its generation; otherwise waits for Stop() or the timeout.
  StatusOr<api::Membership> WaitNewer(int64_t after, std::chrono::milliseconds timeout) override;
  api::Membership Latest() const override { return record_; }
  void Stop() override;

 private:
  const api::Membership record_;  // constant after construction
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
};

}  // namespace ringmaster::membership
