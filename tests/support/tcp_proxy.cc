#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

namespace ringmaster::testing {

namespace {

// Writes all of `n` bytes; false when the peer is gone.
bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int ConnectTo(const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(const std::string& target_host, int target_port) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 128) != 0 || getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    if (listener >= 0) close(listener);
    return InternalError("proxy: cannot listen on 127.0.0.1: " + why);
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    close(listener);
    return InternalError("proxy: pipe: " + std::string(std::strerror(errno)));
  }
  return std::unique_ptr<TcpProxy>(
      new TcpProxy(listener, ntohs(addr.sin_port), wake[0], wake[1], target_host, target_port));
}

TcpProxy::TcpProxy(int listener, int port, int wake_read, int wake_write, std::string target_host, int target_port)
    : listener_(listener),
      port_(port),
      wake_read_(wake_read),
      wake_write_(wake_write),
      target_host_(std::move(target_host)),
      target_port_(target_port) {
  thread_ = std::thread([this] { Loop(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  char c = 0;
  (void)!write(wake_write_, &c, 1);
  thread_.join();
  close(listener_);
  close(wake_read_);
  close(wake_write_);
}

void TcpProxy::Freeze() {
  frozen_ = true;
  char c = 0;
  (void)!write(wake_write_, &c, 1);
}

void TcpProxy::Loop() {
  // Each connection as (client fd, target fd); bytes read from one are written to the other.
  std::vector<std::pair<int, int>> pairs;
  auto close_pair = [](const std::pair<int, int>& p) {
    close(p.first);
    close(p.second);
  };
  std::vector<char> buf(64 * 1024);
  while (!stopping_) {
    const bool frozen = frozen_;
    std::vector<pollfd> fds = {{wake_read_, POLLIN, 0}};
    if (!frozen) {
      fds.push_back({listener_, POLLIN, 0});
      for (const auto& [client, target] : pairs) {
        fds.push_back({client, POLLIN, 0});
        fds.push_back({target, POLLIN, 0});
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {
      char drain[16];
      (void)!read(wake_read_, drain, sizeof drain);
      continue;  // frozen or stopping: look again
    }
    if (frozen) continue;
    if (fds[1].revents & POLLIN) {
      int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        accepted_++;
        int target = ConnectTo(target_host_, target_port_);
        if (target < 0) {
          close(client);
        } else {
          pairs.emplace_back(client, target);
        }
      }
    }
    // The pairs polled are the first pairs.size() - (new ones) entries; walk them by their poll slots.
    std::vector<std::pair<int, int>> kept;
    const size_t polled = (fds.size() - 2) / 2;
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (i >= polled) {
        kept.push_back(pairs[i]);  // accepted just now
        continue;
      }
      bool alive = true;
      for (int side = 0; side < 2 && alive; ++side) {
        const pollfd& p = fds[2 + 2 * i + side];
        if (p.revents == 0) continue;
        const int from = side == 0 ? pairs[i].first : pairs[i].second;
        const int to = side == 0 ? pairs[i].second : pairs[i].first;
        ssize_t n = recv(from, buf.data(), buf.size(), 0);
        alive = n > 0 && WriteAll(to, buf.data(), static_cast<size_t>(n));
      }
      if (alive) {
        kept.push_back(pairs[i]);
      } else {
        close_pair(pairs[i]);
      }
    }
    pairs = std::move(kept);
  }
  for (const auto& p : pairs) close_pair(p);
}

}  // namespace ringmaster::testing
