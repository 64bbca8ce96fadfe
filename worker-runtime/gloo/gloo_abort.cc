#include "worker-runtime/gloo/gloo_abort.h"

#include <dirent.h>
#include <fcntl.h>
#include <gloo/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/unbound_buffer.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>

namespace ringmaster::gloo {
namespace {

bool SameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && std::memcmp(&x.sin_addr, &y.sin_addr, sizeof x.sin_addr) == 0;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
  }
  return false;
}

std::optional<sockaddr_storage> NameOf(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
               : ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (r != 0 || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) return std::nullopt;
  return ss;
}

// The sockets wanted: near end one of `near`, or far end one of `far`.
bool Wanted(int fd, const std::vector<sockaddr_storage>& near, const std::vector<sockaddr_storage>& far) {
  auto remote = NameOf(fd, true);  // only connected sockets
  if (!remote) return false;
  for (const auto& f : far) {
    if (SameEndpoint(*remote, f)) return true;
  }
  auto local = NameOf(fd, false);
  if (!local) return false;
  for (const auto& n : near) {
    if (SameEndpoint(*local, n)) return true;
  }
  return false;
}

}  // namespace

GlooSockets GlooSockets::Find(::gloo::Context& context, const std::vector<std::vector<char>>& published) {
  std::vector<sockaddr_storage> near, far;
  const int rank = context.rank, size = context.size;
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    try {
      const auto* pair = context.getPair(i).get();
      const auto* self = pair ? dynamic_cast<const ::gloo::transport::tcp::Address*>(&pair->address()) : nullptr;
      if (self) near.push_back(self->getSockaddr());
      // Rank i's value holds one address per pair of rank i, in rank order, rank i skipped.
      if (static_cast<size_t>(i) < published.size() && size > 1 && !published[i].empty() &&
          published[i].size() % (size - 1) == 0) {
        const size_t width = published[i].size() / (size - 1);
        const size_t slot = static_cast<size_t>(rank > i ? rank - 1 : rank);
        std::vector<char> bytes(published[i].begin() + slot * width, published[i].begin() + (slot + 1) * width);
        far.push_back(::gloo::transport::tcp::Address(bytes).getSockaddr());
      }
    } catch (...) {
      // Not a TCP pair, or an address Gloo cannot parse: that pair is not held.
    }
  }
  GlooSockets found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  const int own = ::dirfd(dir);
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    if (!Wanted(static_cast<int>(fd), near, far)) continue;
    // Hold the socket itself; the check again on the duplicate rules out a descriptor that was
    // closed and reused in between (a connection's pair of endpoints is unique while it is open).
    int dup = ::fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 0);
    if (dup < 0) continue;
    if (Wanted(dup, near, far)) {
      found.fds_.push_back(dup);
    } else {
      ::close(dup);
    }
  }
  ::closedir(dir);
  return found;
}

GlooSockets::~GlooSockets() { CloseAll(); }

GlooSockets::GlooSockets(GlooSockets&& other) noexcept
    : fds_(std::move(other.fds_)), interrupted_(other.interrupted_.load()) {
  other.fds_.clear();
}

GlooSockets& GlooSockets::operator=(GlooSockets&& other) noexcept {
  if (this != &other) {
    CloseAll();
    fds_ = std::move(other.fds_);
    interrupted_ = other.interrupted_.load();
    other.fds_.clear();
  }
  return *this;
}

void GlooSockets::Interrupt() const noexcept {
  interrupted_ = true;
  for (int fd : fds_) ::shutdown(fd, SHUT_RD);
}

void GlooSockets::Hangup() const noexcept {
  if (interrupted_.load()) return;
  for (int fd : fds_) ::shutdown(fd, SHUT_WR);
}

void GlooSockets::CloseAll() noexcept {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

namespace {
void AbortWaits(::gloo::transport::UnboundBuffer* buffer) {
  buffer->abortWaitRecv();  // sets a flag under the buffer's mutex and wakes its waiter; a later wait returns false
  buffer->abortWaitSend();
}
}  // namespace

PendingWaits::Scope::Scope(PendingWaits* waits, std::initializer_list<::gloo::transport::UnboundBuffer*> buffers)
    : waits_(waits), buffers_(buffers) {
  std::lock_guard<std::mutex> lock(waits_->mu_);
  for (auto* b : buffers_) {
    waits_->tracked_.insert(b);
    if (waits_->aborted_) AbortWaits(b);
  }
}

PendingWaits::Scope::~Scope() {
  std::lock_guard<std::mutex> lock(waits_->mu_);
  for (auto* b : buffers_) waits_->tracked_.erase(waits_->tracked_.find(b));
}

void PendingWaits::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  for (auto* b : tracked_) AbortWaits(b);
}

}  // namespace ringmaster::gloo
