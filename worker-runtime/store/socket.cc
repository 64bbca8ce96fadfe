#include "worker-runtime/store/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::store {
namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Waits until fd is ready for `events` or the deadline passes.
Status PollUntil(int fd, short events, Deadline deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return DeadlineExceededError("socket operation timed out");
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000 * 1000)));
    if (r > 0) return Status::Ok();
    if (r < 0 && errno != EINTR) return UnavailableError(Errno("poll"));
  }
}

StatusOr<sockaddr_in> MakeAddress(const std::string& host, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError("not a numeric IPv4 address: '" + host + "'");
  }
  return addr;
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.Release();
  }
  return *this;
}

int Socket::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

StatusOr<Socket> Socket::Connect(const std::string& host, uint16_t port, Deadline deadline) {
  RINGMASTER_ASSIGN_OR_RETURN(sockaddr_in addr, MakeAddress(host, port));
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return UnavailableError(Errno("socket"));
  int r = ::connect(s.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (r < 0 && errno != EINPROGRESS) return UnavailableError(Errno("connect"));
  if (r < 0) {
    RINGMASTER_RETURN_IF_ERROR(PollUntil(s.fd_, POLLOUT, deadline));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return UnavailableError("connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(err));
    }
  }
  int one = 1;
  ::setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

StatusOr<Socket> Socket::Listen(const std::string& host, uint16_t port, int backlog) {
  RINGMASTER_ASSIGN_OR_RETURN(sockaddr_in addr, MakeAddress(host, port));
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return UnavailableError(Errno("socket"));
  int one = 1;
  ::setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(s.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) return UnavailableError(Errno("bind"));
  if (::listen(s.fd_, backlog) < 0) return UnavailableError(Errno("listen"));
  return s;
}

uint16_t Socket::LocalPort() const {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) < 0) return 0;
  return ntohs(addr.sin_port);
}

Status Socket::WriteAll(std::string_view data, Deadline deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RINGMASTER_RETURN_IF_ERROR(PollUntil(fd_, POLLOUT, deadline));
      continue;
    }
    return UnavailableError(Errno("send"));
  }
  return Status::Ok();
}

Status Socket::ReadExact(void* buf, size_t n, Deadline deadline) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::recv(fd_, p + done, n - done, 0);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return UnavailableError("connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RINGMASTER_RETURN_IF_ERROR(PollUntil(fd_, POLLIN, deadline));
      continue;
    }
    return UnavailableError(Errno("recv"));
  }
  return Status::Ok();
}

StatusOr<Socket> Socket::Accept(Deadline deadline) {
  for (;;) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return Socket(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RINGMASTER_RETURN_IF_ERROR(PollUntil(fd_, POLLIN, deadline));
      continue;
    }
    return UnavailableError(Errno("accept"));
  }
}

void Socket::Shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace ringmaster::store
