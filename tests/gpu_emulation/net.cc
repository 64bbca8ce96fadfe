#include "tests/gpu_emulation/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace gpuemu {
namespace {

constexpr int kPollSliceMs = 20;  // how often a blocked call looks at its abort flags

using Clock = std::chrono::steady_clock;

socklen_t ToSockaddr(const WireAddr& a, sockaddr_storage* ss) {
  std::memset(ss, 0, sizeof *ss);
  if (a.family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a.port);
    std::memcpy(&in6->sin6_addr, a.ip, 16);
    return sizeof(sockaddr_in6);
  }
  auto* in = reinterpret_cast<sockaddr_in*>(ss);
  in->sin_family = AF_INET;
  in->sin_port = htons(a.port);
  std::memcpy(&in->sin_addr, a.ip, 4);
  return sizeof(sockaddr_in);
}

WireAddr FromSockaddr(const sockaddr_storage& ss) {
  WireAddr a;
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    a.family = AF_INET6;
    a.port = ntohs(in6->sin6_port);
    std::memcpy(a.ip, &in6->sin6_addr, 16);
  } else {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    a.family = AF_INET;
    a.port = ntohs(in->sin_port);
    std::memcpy(a.ip, &in->sin_addr, 4);
  }
  return a;
}

void SetOptions(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits for `events` on fd, one slice at a time; false when aborted or past the deadline.
Io WaitFor(int fd, short events, const AbortCheck& abort, Clock::time_point deadline, bool has_deadline) {
  for (;;) {
    if (abort.Aborted()) return Io::kAborted;
    if (has_deadline && Clock::now() >= deadline) return Io::kTimeout;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, kPollSliceMs);
    if (n > 0) return Io::kOk;
    if (n < 0 && errno != EINTR) return Io::kClosed;
  }
}

}  // namespace

bool ParseIp(const std::string& text, WireAddr* out) {
  WireAddr a;
  if (::inet_pton(AF_INET, text.c_str(), a.ip) == 1) {
    a.family = AF_INET;
  } else if (::inet_pton(AF_INET6, text.c_str(), a.ip) == 1) {
    a.family = AF_INET6;
  } else {
    return false;
  }
  *out = a;
  return true;
}

std::string ToString(const WireAddr& a) {
  char ip[INET6_ADDRSTRLEN] = "?";
  ::inet_ntop(a.family == AF_INET6 ? AF_INET6 : AF_INET, a.ip, ip, sizeof ip);
  return (a.family == AF_INET6 ? "[" + std::string(ip) + "]" : std::string(ip)) + ":" + std::to_string(a.port);
}

int ListenOn(const WireAddr& ip, WireAddr* bound) {
  int fd = ::socket(ip.family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_storage ss;
  WireAddr any_port = ip;
  any_port.port = 0;
  socklen_t len = ToSockaddr(any_port, &ss);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return -1;
  }
  SetOptions(fd);
  socklen_t got = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &got);
  *bound = FromSockaddr(ss);
  return fd;
}

Io ConnectTo(const WireAddr& to, const AbortCheck& abort, int* out) {
  sockaddr_storage ss;
  socklen_t len = ToSockaddr(to, &ss);
  for (;;) {
    if (abort.Aborted()) return Io::kAborted;
    int fd = ::socket(to.family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Io::kClosed;
    SetOptions(fd);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
    if (rc != 0 && errno == EINPROGRESS) {
      Io w = WaitFor(fd, POLLOUT, abort, Clock::now(), false);
      if (w != Io::kOk) {
        ::close(fd);
        return w;
      }
      int err = 0;
      socklen_t elen = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc == 0) {
      *out = fd;
      return Io::kOk;
    }
    ::close(fd);
    // as NCCL's socket connect retries: the peer's listener may not be there yet (or never: then
    // this waits, like a hung NCCL init, until the caller aborts)
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollSliceMs));
  }
}

Io AcceptOne(int listen_fd, const AbortCheck& abort, int timeout_ms, int* out) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      SetOptions(fd);
      *out = fd;
      return Io::kOk;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) return Io::kClosed;
    Io w = WaitFor(listen_fd, POLLIN, abort, deadline, timeout_ms >= 0);
    if (w != Io::kOk) return w;
  }
}

Io SendAll(int fd, const void* data, size_t bytes, const AbortCheck& abort, int timeout_ms, size_t* sent) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  Io result = Io::kOk;
  while (done < bytes) {
    ssize_t n = ::send(fd, p + done, bytes - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Io w = WaitFor(fd, POLLOUT, abort, deadline, timeout_ms >= 0);
      if (w == Io::kOk) continue;
      result = w;
      break;
    }
    result = Io::kClosed;
    break;
  }
  if (sent) *sent = done;
  return result;
}

Io RecvAll(int fd, void* data, size_t bytes, const AbortCheck& abort, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Io::kClosed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Io::kClosed;
    Io w = WaitFor(fd, POLLIN, abort, deadline, timeout_ms >= 0);
    if (w != Io::kOk) return w;
  }
  return Io::kOk;
}

WireAddr LocalAddr(int fd) {
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  std::memset(&ss, 0, sizeof ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return FromSockaddr(ss);
}

void CloseFd(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace gpuemu
