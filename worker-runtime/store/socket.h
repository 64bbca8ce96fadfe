// Blocking TCP helpers on 127.0.0.1 / IPv4 with deadlines, for the rendezvous
// store. Every read and write takes a deadline, so a silent or slow peer can
// never block a caller past it.
//
// Thread-safety: Socket is movable, not copyable; one Socket must not be used
// by two threads at once, except Shutdown(), which may be called from any
// thread to wake a blocked reader.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::store {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline DeadlineIn(std::chrono::milliseconds timeout) { return Clock::now() + timeout; }

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.Release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Connects to host:port (numeric IPv4). Errors: Unavailable (refused,
  // unreachable), DeadlineExceeded.
  static StatusOr<Socket> Connect(const std::string& host, uint16_t port, Deadline deadline);
  // A listening socket on host:port; port 0 picks a free one (see LocalPort()).
  static StatusOr<Socket> Listen(const std::string& host, uint16_t port, int backlog = 128);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int Release();
  // The locally bound port, or 0 on error.
  uint16_t LocalPort() const;

  // Writes all of `data`. Errors: Unavailable (peer gone), DeadlineExceeded.
  Status WriteAll(std::string_view data, Deadline deadline);
  // Reads exactly n bytes. Errors: Unavailable (EOF or reset), DeadlineExceeded.
  Status ReadExact(void* buf, size_t n, Deadline deadline);
  // Accepts one connection. Errors: Unavailable once the socket is shut down.
  StatusOr<Socket> Accept(Deadline deadline);
  // shutdown(SHUT_RDWR): wakes any thread blocked on this socket.
  void Shutdown();

 private:
  int fd_ = -1;
};

}  // namespace ringmaster::store
