// TCP helpers for the bootstrap and the mesh: addresses in a fixed wire form, and connect, accept,
// send and receive that give up when an abort flag is raised (as NCCL's socket.cc functions poll
// comm->abortFlag). Every socket is non-blocking and close-on-exec; sends never raise SIGPIPE.
//
// Thread-safety: the functions are safe from any thread; one fd is used by one thread at a time.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gpuemu {

using Flag = std::atomic<uint32_t>;

// The abort flags an operation watches (up to three; null entries are ignored).
class AbortCheck {
 public:
  AbortCheck() = default;
  explicit AbortCheck(std::shared_ptr<const Flag> a, std::shared_ptr<const Flag> b = nullptr,
                      std::shared_ptr<const Flag> c = nullptr)
      : a_(std::move(a)), b_(std::move(b)), c_(std::move(c)) {}
  bool Aborted() const {
    return (a_ && a_->load(std::memory_order_acquire)) || (b_ && b_->load(std::memory_order_acquire)) ||
           (c_ && c_->load(std::memory_order_acquire));
  }

 private:
  std::shared_ptr<const Flag> a_, b_, c_;
};

// An IPv4 or IPv6 address and port, as carried in unique ids and bootstrap messages.
struct WireAddr {
  uint16_t family = 0;  // AF_INET or AF_INET6
  uint16_t port = 0;    // host order
  uint8_t ip[16] = {};
};

bool ParseIp(const std::string& text, WireAddr* out);  // port 0
std::string ToString(const WireAddr& a);

enum class Io { kOk, kAborted, kClosed, kTimeout };

// A listening socket on ip (port chosen by the kernel); its address in *bound. -1 on failure.
int ListenOn(const WireAddr& ip, WireAddr* bound);
// Connects to `to`, retrying while it refuses (the listener may not exist yet), until aborted.
Io ConnectTo(const WireAddr& to, const AbortCheck& abort, int* fd);
// The next connection on a listening socket; timeout_ms < 0: no timeout.
Io AcceptOne(int listen_fd, const AbortCheck& abort, int timeout_ms, int* fd);
// All the bytes, or why not (kClosed: the peer is gone or the socket failed); *sent: how many went.
Io SendAll(int fd, const void* data, size_t bytes, const AbortCheck& abort, int timeout_ms = -1,
           size_t* sent = nullptr);
Io RecvAll(int fd, void* data, size_t bytes, const AbortCheck& abort, int timeout_ms = -1);
// The local address of a connected socket (port included).
WireAddr LocalAddr(int fd);

void CloseFd(int fd);

}  // namespace gpuemu
