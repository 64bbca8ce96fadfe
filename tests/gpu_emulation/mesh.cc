#include "tests/gpu_emulation/mesh.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace gpuemu {
namespace {

struct Hello {
  uint64_t magic;
  int32_t rank;
  int32_t pad;
};

constexpr int kHelloTimeoutMs = 5000;
// An abort in the middle of a message: the rest still goes out if the peer takes it this soon
// (a live peer always does: its reader drains), else the connection is broken.
constexpr int kFinishMessageMs = 2000;

}  // namespace

ncclResult_t Mesh::Build(int rank, const std::vector<WireAddr>& addrs, uint64_t magic, int listen_fd,
                         const AbortCheck& abort, std::shared_ptr<Mesh>* out) {
  const int n = static_cast<int>(addrs.size());
  std::vector<int> fds(n, -1);
  WireAddr local_ip = LocalAddr(listen_fd);
  local_ip.port = 0;
  auto fail = [&] {
    for (int fd : fds) CloseFd(fd);
    CloseFd(listen_fd);
    return ncclInternalError;  // only an abort stops a build (a missing peer makes it wait)
  };
  // the lower rank connects; the higher one checks the communicator's magic and acknowledges
  for (int peer = rank + 1; peer < n; ++peer) {
    for (;;) {
      int fd = -1;
      if (ConnectTo(addrs[peer], abort, &fd) != Io::kOk) return fail();
      Hello hello{magic, rank, 0};
      uint64_t ack = 0;
      Io io = SendAll(fd, &hello, sizeof hello, abort);
      if (io == Io::kOk) io = RecvAll(fd, &ack, sizeof ack, abort);
      if (io == Io::kOk && ack == magic) {
        fds[peer] = fd;
        break;
      }
      CloseFd(fd);
      if (io == Io::kAborted) return fail();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // not (yet) that communicator's listener
    }
  }
  for (int need = rank; need > 0;) {
    int fd = -1;
    Io io = AcceptOne(listen_fd, abort, -1, &fd);
    if (io == Io::kAborted) return fail();
    if (io != Io::kOk) continue;
    Hello hello{};
    io = RecvAll(fd, &hello, sizeof hello, abort, kHelloTimeoutMs);
    if (io == Io::kOk && hello.magic == magic && hello.rank >= 0 && hello.rank < rank && fds[hello.rank] < 0) {
      uint64_t ack = magic;
      if (SendAll(fd, &ack, sizeof ack, abort) == Io::kOk) {
        fds[hello.rank] = fd;
        --need;
        continue;
      }
    }
    CloseFd(fd);
    if (io == Io::kAborted) return fail();
  }
  CloseFd(listen_fd);
  out->reset(new Mesh(rank, fds, local_ip));
  return ncclSuccess;
}

Mesh::Mesh(int rank, const std::vector<int>& fds, WireAddr local_ip)
    : rank_(rank), local_ip_(local_ip), boxes_(fds.size()) {
  for (int fd : fds) {
    peers_.push_back(std::make_unique<Peer>());
    peers_.back()->fd = fd;
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  reader_ = std::thread([this] { ReaderLoop(); });
}

Mesh::~Mesh() { Shutdown(); }

void Mesh::Shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  if (reader_.joinable()) reader_.join();
  for (auto& p : peers_) {
    std::lock_guard<std::mutex> send_lock(p->send_mu);
    CloseFd(p->fd);
    p->fd = -1;
    p->broken = true;
  }
  CloseFd(wake_fd_);
  std::lock_guard<std::mutex> boxes_lock(mu_);
  arrived_.notify_all();
}

void Mesh::ReaderLoop() {
  std::vector<pollfd> pfds;
  std::vector<int> who;
  while (!stopping_.load()) {
    pfds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    who.assign(1, -1);
    for (int r = 0; r < size(); ++r) {
      if (r != rank_ && peers_[r]->fd >= 0 && !peers_[r]->eof) {
        pfds.push_back(pollfd{peers_[r]->fd, POLLIN, 0});
        who.push_back(r);
      }
    }
    int n = ::poll(pfds.data(), pfds.size(), 1000);
    if (n <= 0) continue;
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      // The end of a connection (a dead peer) is only noted: its mailbox gets nothing more.
      if (!ReadFrom(who[i])) peers_[who[i]]->eof = true;
    }
  }
}

bool Mesh::ReadFrom(int peer) {
  Peer& p = *peers_[peer];
  for (int reads = 0; reads < 64; ++reads) {
    ssize_t n;
    if (p.header_got < sizeof p.header) {
      n = ::recv(p.fd, p.header + p.header_got, sizeof p.header - p.header_got, 0);
    } else {
      n = ::recv(p.fd, p.msg.data.get() + p.got, p.msg.size - p.got, 0);
    }
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (p.header_got < sizeof p.header) {
      p.header_got += static_cast<size_t>(n);
      if (p.header_got < sizeof p.header) continue;
      uint64_t bytes = 0;
      std::memcpy(&p.tag, p.header, 8);
      std::memcpy(&bytes, p.header + 8, 8);
      p.msg.size = bytes;
      p.msg.data.reset(bytes ? new char[bytes] : nullptr);
      p.got = 0;
    } else {
      p.got += static_cast<size_t>(n);
    }
    if (p.got == p.msg.size) {
      Deliver(peer, p.tag, std::move(p.msg));
      p.msg = Message{};
      p.header_got = 0;
      p.got = 0;
    }
  }
  return true;
}

void Mesh::Deliver(int peer, uint64_t tag, Message msg) {
  std::lock_guard<std::mutex> lock(mu_);
  if (discarded_.count(tag)) return;
  boxes_[peer][tag].push_back(std::move(msg));
  arrived_.notify_all();
}

void Mesh::Send(int peer, uint64_t tag, const void* data, size_t bytes, const AbortCheck& abort) {
  if (peer == rank_) {
    Message msg;
    msg.size = bytes;
    msg.data.reset(bytes ? new char[bytes] : nullptr);
    if (bytes) std::memcpy(msg.data.get(), data, bytes);
    Deliver(peer, tag, std::move(msg));
    return;
  }
  Peer& p = *peers_[peer];
  std::lock_guard<std::mutex> lock(p.send_mu);
  if (p.broken || p.fd < 0) return;  // gone: dropped (the receiver, if any, waits)
  unsigned char header[16];
  const uint64_t size = bytes;
  std::memcpy(header, &tag, 8);
  std::memcpy(header + 8, &size, 8);
  size_t sent = 0, total = 0;
  Io io = SendAll(p.fd, header, sizeof header, abort, -1, &sent);
  total += sent;
  if (io == Io::kOk && bytes > 0) {
    io = SendAll(p.fd, data, bytes, abort, -1, &sent);
    total += sent;
  }
  if (io == Io::kAborted && total > 0) {
    // finish the message if the peer takes it (the connection must stay framed), else break it
    const AbortCheck never;
    io =
        total < sizeof header ? SendAll(p.fd, header + total, sizeof header - total, never, kFinishMessageMs) : Io::kOk;
    size_t body_done = total > sizeof header ? total - sizeof header : 0;
    if (io == Io::kOk && bytes > body_done) {
      io = SendAll(p.fd, static_cast<const char*>(data) + body_done, bytes - body_done, never, kFinishMessageMs);
    }
    if (io != Io::kOk) {
      p.broken = true;
      ::shutdown(p.fd, SHUT_RDWR);  // the peer sees the end of the connection; the reader notes it
    }
    return;
  }
  if (io == Io::kClosed) p.broken = true;
}

bool Mesh::Recv(int peer, uint64_t tag, Message* out, const AbortCheck& abort) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto& box = boxes_[peer];
    auto it = box.find(tag);
    if (it != box.end() && !it->second.empty()) {
      *out = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) box.erase(it);
      return true;
    }
    if (abort.Aborted() || stopping_.load()) return false;
    arrived_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

bool Mesh::RecvAny(uint64_t tag, Message* out, int* from, const AbortCheck& abort) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    for (int r = 0; r < size(); ++r) {
      auto it = boxes_[r].find(tag);
      if (it != boxes_[r].end() && !it->second.empty()) {
        *out = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) boxes_[r].erase(it);
        *from = r;
        return true;
      }
    }
    if (abort.Aborted() || stopping_.load()) return false;
    arrived_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

void Mesh::Discard(const std::vector<uint64_t>& tags) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t tag : tags) {
    discarded_.insert(tag);
    for (auto& box : boxes_) box.erase(tag);
  }
}

}  // namespace gpuemu
