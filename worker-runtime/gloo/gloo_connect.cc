#include "worker-runtime/gloo/gloo_connect.h"

#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/tcp/loop.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace ringmaster::gloo {
namespace {

namespace tcp = ::gloo::transport::tcp;
using Clock = std::chrono::steady_clock;

// When the event loop is nudged while dials are in flight: first kFirstNudge after the last dial started, then
// twice as long after each nudge up to kLastNudge apart, and no more kNudgeFor after the last dial started (a dial
// needs the loop only for its first step, the unregister; later Gloo's own ticks serve). Backing off matters: at
// 31 ranks on 2 cores, every process nudging every 100 us took the cores the dials needed.
constexpr auto kFirstNudge = std::chrono::microseconds(50);
constexpr auto kLastNudge = std::chrono::microseconds(1600);
constexpr auto kNudgeFor = std::chrono::milliseconds(50);

// A gloo::Context whose transport context is built here (Gloo keeps the members protected).
class MeshContext final : public ::gloo::Context {
 public:
  MeshContext(int rank, int size) : ::gloo::Context(rank, size) {}
  void Adopt(std::shared_ptr<::gloo::transport::Device> device, std::shared_ptr<::gloo::transport::Context> transport) {
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

// Gloo's rule (tcp::Pair::connect): of a pair's two ends, the one whose address compares higher dials, the
// other waits for it. Ports compare as stored (network byte order), as Gloo does.
bool DialsFirst(const sockaddr_storage& self, const sockaddr_storage& peer) {
  int rv = 0;
  if (self.ss_family == AF_INET && peer.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(self);
    const auto& b = reinterpret_cast<const sockaddr_in&>(peer);
    rv = std::memcmp(&a.sin_addr, &b.sin_addr, sizeof a.sin_addr);
    if (rv == 0) rv = a.sin_port - b.sin_port;
  } else if (self.ss_family == AF_INET6 && peer.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(self);
    const auto& b = reinterpret_cast<const sockaddr_in6&>(peer);
    rv = std::memcmp(&a.sin6_addr, &b.sin6_addr, sizeof a.sin6_addr);
    if (rv == 0) rv = a.sin6_port - b.sin6_port;
  }
  return rv > 0;  // a family mismatch: connect() itself throws, on the calling thread
}

// Wakes a TCP device's event loop on demand: an eventfd registered with the loop, which a dial's unregister
// otherwise waits for (the loop wakes every 10 ms when idle). Inactive (Nudge does nothing) when the device is
// not Gloo's TCP device or registering fails. The destructor has the loop thread unregister the eventfd itself
// (there Gloo's unregister does not wait for a tick) and waits until it has: the loop never calls a destroyed
// handler. Thread-safety: Nudge from any thread; handleEvents on the loop thread.
class LoopNudger final : public tcp::Handler {
 public:
  LoopNudger(const std::shared_ptr<::gloo::transport::Device>& device, bool enabled) {
    if (!enabled) return;
    device_ = std::dynamic_pointer_cast<tcp::Device>(device);
    if (!device_) return;
    fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) return;
    try {
      device_->registerDescriptor(fd_, EPOLLIN, this);
      registered_ = true;
    } catch (...) {
      // Not nudged: dials wait for the loop's ticks, as in Gloo's own connect.
    }
  }
  ~LoopNudger() override {
    if (registered_) {
      stopping_.store(true);
      Nudge();
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return unregistered_; });  // the loop runs while device_ (held here) lives
    }
    if (fd_ >= 0) ::close(fd_);
  }
  LoopNudger(const LoopNudger&) = delete;
  LoopNudger& operator=(const LoopNudger&) = delete;

  void Nudge() const {
    if (!registered_) return;
    const uint64_t one = 1;
    (void)!::write(fd_, &one, sizeof one);
  }

  void handleEvents(int /*events*/) override {
    // Drain first, then look at stopping_: a nudge that the destructor sends after setting it is either
    // drained here (and stopping_ is seen) or raises a new event.
    uint64_t count = 0;
    (void)!::read(fd_, &count, sizeof count);
    if (!stopping_.load()) return;
    try {
      device_->unregisterDescriptor(fd_, this);  // on the loop thread: returns at once
    } catch (...) {
      // epoll_ctl refused: the descriptor is not in the loop's set, which is all that matters here.
    }
    std::lock_guard<std::mutex> lock(mu_);
    unregistered_ = true;
    cv_.notify_all();
  }

 private:
  std::shared_ptr<tcp::Device> device_;
  int fd_ = -1;
  bool registered_ = false;  // constant after construction
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool unregistered_ = false;  // guarded by mu_
};

// The peers in the order the first collectives need them: ring neighbours first (right, left), then by distance.
std::vector<int> RingOrder(int rank, int size) {
  std::vector<int> order;
  for (int d = 1; static_cast<int>(order.size()) < size - 1; ++d) {
    const int right = (rank + d) % size, left = (rank - d + size) % size;
    order.push_back(right);
    if (left != right && static_cast<int>(order.size()) < size - 1) order.push_back(left);
  }
  return order;
}

std::string What(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

// The dials in flight: one thread each. Thread-safety: thread-safe.
class Dials {
 public:
  ~Dials() { Join(); }

  // Starts pair->connect(address) on its own thread. Errors: Aborted (no thread).
  Status Start(int peer, ::gloo::transport::Pair* pair, std::vector<char> address) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++pending_;
      last_start_ = Clock::now();
    }
    try {
      threads_.emplace_back([this, peer, pair, address = std::move(address)] {
        std::exception_ptr failed;
        try {
          pair->connect(address);
        } catch (...) {
          failed = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (failed && error_.ok())
          error_ = AbortedError("connecting to rank " + std::to_string(peer) + ": " + What(failed));
        --pending_;
        cv_.notify_all();
      });
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
      return AbortedError(std::string("starting a thread to connect to rank ") + std::to_string(peer) + ": " +
                          e.what());
    }
    return Status::Ok();
  }

  // Waits until every dial ended or one failed, nudging the loop meanwhile (see kFirstNudge). Returns the first
  // dial's error.
  Status Wait(const LoopNudger& nudger) {
    std::unique_lock<std::mutex> lock(mu_);
    Clock::time_point from = last_start_;
    std::chrono::microseconds gap = kFirstNudge;
    while (pending_ > 0 && error_.ok()) {
      if (last_start_ != from) {  // a dial started since: nudge soon again
        from = last_start_;
        gap = kFirstNudge;
      }
      if (Clock::now() - from >= kNudgeFor) {
        cv_.wait(lock);
        continue;
      }
      cv_.wait_for(lock, gap);
      if (pending_ == 0 || !error_.ok()) break;
      nudger.Nudge();
      gap = std::min(gap * 2, kLastNudge);
    }
    return error_;
  }

  void Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  Status error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  std::vector<std::thread> threads_;  // used by the calling thread only
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;               // guarded by mu_
  Clock::time_point last_start_;  // guarded by mu_
  Status error_;                  // guarded by mu_; the first failure
};

// Closes every pair, so that connects still waiting on them return (Pair::close wakes them).
void CloseAll(::gloo::transport::Context& transport, int rank, int size) {
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    try {
      if (auto& pair = transport.getPair(i)) pair->close();
    } catch (...) {}
  }
}

// Reading the peers' published values (step 2). Each rank reading every peer's key costs the store n(n-1)
// requests, which one store server answers one after another: at 31 ranks about 50 ms on 2 cores, most of the
// connect. From kGatherFrom ranks on, rank 0 reads every key and publishes them all under one key, which the
// others read once: about 4n requests. (All ranks decide alike: on the world's size and the fixed width of a
// Gloo TCP address.) If rank 0 fails to gather, it publishes why, and the others fail at once with that reason.
constexpr int kGatherFrom = 4;
constexpr size_t kMaxGatheredBytes = 4u << 20;  // well under the store's value limit (16 MiB)
constexpr char kGatheredKey[] = "gathered";
constexpr char kGatheredOk = 1, kGatheredError = 2;

void PutU64(std::vector<char>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool GetU64(const std::vector<char>& in, size_t& at, uint64_t& v) {
  if (at > in.size() || in.size() - at < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  at += 8;
  return true;
}

class PeerAddresses {
 public:
  PeerAddresses(::gloo::rendezvous::Store& store, int rank, int size, const std::vector<char>& mine)
      : store_(store),
        rank_(rank),
        size_(size),
        gathered_(size >= kGatherFrom && static_cast<size_t>(size) * (mine.size() + 8) <= kMaxGatheredBytes),
        values_(size) {
    if (gathered_ && rank_ == 0) values_[0] = mine;
  }

  // Rank `peer`'s value (each peer once). Errors: Aborted naming the peer, or rank 0's reason.
  StatusOr<std::vector<char>> Read(int peer) {
    if (!gathered_ || rank_ == 0) {
      std::vector<char> value;
      try {
        value = store_.get(std::to_string(peer));
      } catch (...) {
        return AbortedError("reading rank " + std::to_string(peer) + "'s addresses: " + What(std::current_exception()));
      }
      if (gathered_) values_[peer] = value;
      return value;
    }
    if (!fetched_) {
      fetched_ = true;
      read_ = Fetch();
    }
    RINGMASTER_RETURN_IF_ERROR(read_);
    return std::move(values_[peer]);
  }

  // Rank 0 of a gathered exchange: publishes every value read (or `failed`, when it could not read them all).
  // Errors: Aborted (the store refused it). Elsewhere: OK.
  Status Publish(const Status& failed) {
    if (!gathered_ || rank_ != 0) return Status::Ok();
    std::vector<char> out;
    if (failed.ok()) {
      out.push_back(kGatheredOk);
      for (const auto& v : values_) {
        PutU64(out, v.size());
        out.insert(out.end(), v.begin(), v.end());
      }
    } else {
      out.push_back(kGatheredError);
      const std::string why = failed.ToString();
      out.insert(out.end(), why.begin(), why.end());
    }
    try {
      store_.set(kGatheredKey, out);
    } catch (...) {
      return AbortedError("publishing the gathered addresses: " + What(std::current_exception()));
    }
    return Status::Ok();
  }

 private:
  Status Fetch() {
    std::vector<char> in;
    try {
      in = store_.get(kGatheredKey);
    } catch (...) {
      return AbortedError("reading the addresses rank 0 gathers: " + What(std::current_exception()));
    }
    if (!in.empty() && in[0] == kGatheredError) {
      return AbortedError("rank 0 could not gather the addresses: " + std::string(in.begin() + 1, in.end()));
    }
    size_t at = 1;
    for (int i = 0; i < size_ && !in.empty() && in[0] == kGatheredOk; ++i) {
      uint64_t n = 0;
      if (!GetU64(in, at, n) || n > in.size() - at) break;
      values_[i].assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
      if (i == size_ - 1 && at == in.size()) return Status::Ok();
    }
    return AbortedError("rank 0 gathered a malformed address list (" + std::to_string(in.size()) + " bytes)");
  }

  ::gloo::rendezvous::Store& store_;
  const int rank_;
  const int size_;
  const bool gathered_;
  std::vector<std::vector<char>> values_;  // gathered: rank 0's reads, or what rank 0 published
  bool fetched_ = false;
  Status read_;
};

}  // namespace

StatusOr<ConnectedMesh> ConnectMesh(::gloo::rendezvous::Store& store,
                                    const std::shared_ptr<::gloo::transport::Device>& device, int rank, int size,
                                    const MeshOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " of size " + std::to_string(size));
  }
  if (!device) return InvalidArgumentError("no Gloo device");
  std::shared_ptr<::gloo::transport::Context> transport;
  ConnectedMesh mesh;
  mesh.published.resize(size);
  std::vector<sockaddr_storage> self(size);
  std::vector<char> mine;
  // 1. Pairs, and this rank's addresses published.
  try {
    transport = device->createContext(rank, size);
    transport->setTimeout(options.timeout);
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      auto& pair = transport->createPair(i);
      const auto* address = dynamic_cast<const tcp::Address*>(&pair->address());
      if (address) self[i] = address->getSockaddr();
      auto bytes = pair->address().bytes();
      mine.insert(mine.end(), bytes.begin(), bytes.end());
    }
    store.set(std::to_string(rank), mine);
  } catch (...) {
    return AbortedError("creating and publishing this rank's pairs: " + What(std::current_exception()));
  }

  LoopNudger nudger(device, options.nudge_loop);
  Status failed;
  std::vector<std::pair<int, std::vector<char>>> awaited;  // the pairs peers dial: (peer, its address)
  {
    // Declared after the nudger: joined (destroyed) before it.
    Dials dials;
    // 2. Peers' addresses, dials started as they arrive.
    PeerAddresses addresses(store, rank, size, mine);
    for (int peer : RingOrder(rank, size)) {
      StatusOr<std::vector<char>> read = addresses.Read(peer);
      if (!read.ok()) {
        failed = read.status();
        break;
      }
      std::vector<char> all = std::move(read).value();
      if (all.empty() || all.size() % static_cast<size_t>(size - 1) != 0) {
        failed = AbortedError("rank " + std::to_string(peer) + " published " + std::to_string(all.size()) +
                              " bytes of addresses for " + std::to_string(size - 1) + " peers");
        break;
      }
      const size_t width = all.size() / static_cast<size_t>(size - 1);
      const size_t slot = static_cast<size_t>(rank > peer ? rank - 1 : rank);
      std::vector<char> address(all.begin() + static_cast<std::ptrdiff_t>(slot * width),
                                all.begin() + static_cast<std::ptrdiff_t>((slot + 1) * width));
      mesh.published[peer] = std::move(all);
      bool dials_first = false;
      try {
        dials_first = DialsFirst(self[peer], tcp::Address(address).getSockaddr());
      } catch (...) {
        // Not an address Gloo parses: connect() on this thread reports it.
      }
      if (dials_first) {
        failed = dials.Start(peer, transport->getPair(peer).get(), std::move(address));
        if (!failed.ok()) break;
        nudger.Nudge();
      } else {
        awaited.emplace_back(peer, std::move(address));
      }
      if (Status e = dials.error(); !e.ok()) {
        failed = e;
        break;
      }
    }
    Status published = addresses.Publish(failed);
    if (failed.ok()) failed = published;
    // 3. The dials, nudged.
    if (failed.ok()) failed = dials.Wait(nudger);
    if (!failed.ok()) CloseAll(*transport, rank, size);
    dials.Join();
  }
  // 4. The pairs peers dial: already connected, or soon (each rank dials all of its pairs at once).
  for (auto& [peer, address] : awaited) {
    if (!failed.ok()) break;
    try {
      transport->getPair(peer)->connect(address);
    } catch (...) {
      failed = AbortedError("connecting to rank " + std::to_string(peer) + ": " + What(std::current_exception()));
    }
  }
  if (!failed.ok()) {
    CloseAll(*transport, rank, size);
    return failed;
  }
  auto context = std::make_shared<MeshContext>(rank, size);
  context->setTimeout(options.timeout);
  context->Adopt(device, std::move(transport));
  mesh.context = std::move(context);
  return mesh;
}

}  // namespace ringmaster::gloo
