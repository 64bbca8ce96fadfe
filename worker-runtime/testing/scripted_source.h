// Test helpers for the elastic driver's tests: a membership source the test publishes records to, and a
// loopback port nobody listens on. Header-only; test code only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "worker-runtime/membership/membership_source.h"

namespace ringmaster::testing {

// A membership source the test publishes to. Thread-safe.
class ScriptedSource : public membership::MembershipSource {
 public:
  void Publish(api::Membership record) {
    std::lock_guard lock(mu_);
    latest_ = std::move(record);
    cv_.notify_all();
  }
  StatusOr<api::Membership> WaitNewer(int64_t after, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return stopped_ || latest_.generation > after; }))
      return DeadlineExceededError("no newer membership");
    if (stopped_) return CancelledError("stopped");
    return latest_;
  }
  api::Membership Latest() const override {
    std::lock_guard lock(mu_);
    return latest_;
  }
  void Stop() override {
    std::lock_guard lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  api::Membership latest_;
  bool stopped_ = false;
};

// A loopback port nobody listens on now (a driver serves its store there a moment later); 0 if none was found.
inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace ringmaster::testing
