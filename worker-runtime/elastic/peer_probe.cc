#include "worker-runtime/elastic/peer_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::elastic {

namespace {

struct Attempt {
  std::string pod;
  int fd = -1;
  bool answered = false;  // connected or refused
  bool unreachable = false;
};

// Starts a non-blocking connect to address:port; fills `a` when it settles at once.
void StartConnect(Attempt& a, const std::string& address, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    a.answered = true;  // not an address we probe: never reported
    return;
  }
  a.fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (a.fd < 0) {
    a.answered = true;  // our own trouble, not evidence against the peer
    return;
  }
  if (::connect(a.fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 || errno == ECONNREFUSED) {
    a.answered = true;
  } else if (errno == ENETUNREACH || errno == EHOSTUNREACH) {
    a.unreachable = true;
  } else if (errno != EINPROGRESS) {
    a.answered = true;
  }
}

}  // namespace

std::vector<std::string> UnreachablePeers(const api::Membership& record, const std::string& self, uint16_t port,
                                          std::chrono::milliseconds timeout) {
  // One attempt per pod: its processes share its address, so one answer speaks for all of them.
  const api::Member* me = record.Find(self);
  std::vector<Attempt> attempts;
  for (const auto& m : record.members) {
    if (m.id() == self || (me != nullptr && m.pod == me->pod)) continue;
    bool probed = false;
    for (const auto& a : attempts) probed |= a.pod == m.pod;
    if (probed) continue;
    Attempt a;
    a.pod = m.pod;
    StartConnect(a, m.address, port);
    attempts.push_back(std::move(a));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Attempt*> waiting;
    for (auto& a : attempts) {
      if (a.answered || a.unreachable || a.fd < 0) continue;
      fds.push_back({a.fd, POLLOUT, 0});
      waiting.push_back(&a);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (fds.empty() || left.count() <= 0) break;
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      int error = 0;
      socklen_t elen = sizeof error;
      ::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &error, &elen);
      if (error == ENETUNREACH || error == EHOSTUNREACH || error == ETIMEDOUT)
        waiting[i]->unreachable = true;
      else
        waiting[i]->answered = true;  // connected (0) or refused
    }
  }
  std::vector<std::string> out;
  for (auto& a : attempts) {
    if (a.fd >= 0) ::close(a.fd);
    if (!a.answered) out.push_back(a.pod);  // unreachable, or no answer before the deadline
  }
  return out;
}

}  // namespace ringmaster::elastic
