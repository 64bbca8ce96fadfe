#include "worker-runtime/gloo/shm_allreduce.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>

#include "worker-runtime/common/reduce_kernels.h"
#include "worker-runtime/gloo/allreduce_algorithm.h"

namespace ringmaster::gloo {

// The start of every rank's segment; the two slots follow at kHeaderBytes. Written by its owner only
// (progress, failed) except `waiters`, which its peers count themselves into while they sleep.
struct ShmAllreduce::Header {
  uint64_t magic;
  uint64_t nonce;   // random; published through the store, so a peer knows it mapped this very segment
  uint64_t pid;     // the owner's process ...
  uint64_t pid_ns;  // ... in this PID namespace (the inode of /proc/self/ns/pid; 0: unknown)
  uint64_t slot_bytes;
  alignas(64) uint32_t progress;  // 3 per window: input copied in, part reduced, result copied out
  alignas(64) uint32_t waiters;   // peers asleep on progress (the owner wakes them only then)
  uint32_t failed;                // non-zero: the owner will not advance again
};

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMagic = 0x52696e67'73686d31ULL;  // "Ringshm1"
constexpr size_t kHeaderBytes = 4096;
// How often a sleeping waiter looks at the abort state, its peer's process and the clock.
constexpr auto kSlice = std::chrono::milliseconds(10);
// Busy checks before sleeping: a peer that is running reaches the next step within microseconds, but on an
// oversubscribed machine (8 ranks, 2 cores) spinning takes the core it needs, so the spin is short.
constexpr int kSpins = 64;
constexpr int kYields = 4;
// How often a rank waiting for its peers' setup keys looks at the abort state.
constexpr auto kSetupSlice = std::chrono::milliseconds(100);

std::atomic_ref<uint32_t> Ref(uint32_t& v) { return std::atomic_ref<uint32_t>(v); }

// a >= b on a wrapping counter.
bool Reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

long Futex(uint32_t* addr, int op, uint32_t val, const struct timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is in memory shared with other processes.
  return ::syscall(SYS_futex, addr, op, val, timeout, nullptr, 0);
}

uint64_t PidNamespace() {
  struct stat st{};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// Unpredictable enough to tell segments apart (not a secret): getrandom, else the clock and the pid (no
// exception can leave here, as std::random_device's could).
uint64_t RandomNonce() {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof v, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof v)) return v;
  const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return now * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(::getpid());
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// store.Get(key) until `deadline`, in slices, so that `health` (an Abort) ends the wait too.
StatusOr<std::string> GetAbortably(store::Store& store, const std::string& key, Clock::time_point deadline,
                                   const std::function<Status()>& health) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    StatusOr<std::string> v = store.Get(key, std::clamp(left, std::chrono::milliseconds(1), kSetupSlice));
    if (v.ok() || v.status().code() != StatusCode::kDeadlineExceeded) return v;
    RINGMASTER_RETURN_IF_ERROR(health());
    if (Clock::now() >= deadline) return v;
  }
}

}  // namespace

size_t ShmAllreduce::DefaultSlotBytes(int ranks) {
  // Small enough for the working set of a window (ranks slots) to stay in a shared L3, and for
  // 2 x ranks slots to fit a container's default 64 MiB /dev/shm with room to spare.
  const size_t budget = (16u << 20) / static_cast<size_t>(std::max(ranks, 1));
  return std::clamp<size_t>(budget, 256u << 10, 4u << 20) & ~size_t{63};
}

StatusOr<std::unique_ptr<ShmAllreduce>> ShmAllreduce::Connect(store::Store& store, const std::string& prefix, int rank,
                                                              int size, size_t slot_bytes,
                                                              std::chrono::milliseconds timeout,
                                                              const std::function<Status()>& health) {
  const auto deadline = Clock::now() + timeout;
  const size_t segment_bytes = kHeaderBytes + 2 * slot_bytes;
  const uint64_t nonce = RandomNonce();
  const std::string name = "/ringmaster-" + std::to_string(::getpid()) + "-" + Hex(nonce);
  std::vector<std::unique_ptr<ShmSegment>> segments(size);
  auto own = ShmSegment::Create(name, segment_bytes);
  std::string published = "-";
  if (own.ok()) {
    auto* h = static_cast<Header*>((*own)->data());
    h->magic = kMagic;
    h->nonce = nonce;
    h->pid = static_cast<uint64_t>(::getpid());
    h->pid_ns = PidNamespace();
    h->slot_bytes = slot_bytes;
    published = name + " " + Hex(nonce) + " " + std::to_string(slot_bytes);
    segments[rank] = std::move(own).value();
  }
  RINGMASTER_RETURN_IF_ERROR(store.Set(prefix + "/shm/" + std::to_string(rank), published));
  bool ok = segments[rank] != nullptr;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    RINGMASTER_ASSIGN_OR_RETURN(std::string v,
                                GetAbortably(store, prefix + "/shm/" + std::to_string(r), deadline, health));
    if (!ok) continue;  // still read every key: nothing is left half-done
    char peer_name[256] = {0}, peer_nonce[32] = {0};
    unsigned long long peer_slot = 0;
    if (std::sscanf(v.c_str(), "%255s %31s %llu", peer_name, peer_nonce, &peer_slot) != 3 || peer_slot != slot_bytes) {
      ok = false;
      continue;
    }
    auto seg = ShmSegment::Open(peer_name, segment_bytes);
    if (!seg.ok()) {  // another host, or no shared /dev/shm
      ok = false;
      continue;
    }
    const auto* h = static_cast<const Header*>((*seg)->data());
    if (h->magic != kMagic || Hex(h->nonce) != peer_nonce) {
      ok = false;
      continue;
    }
    segments[r] = std::move(seg).value();
  }
  RINGMASTER_RETURN_IF_ERROR(store.Set(prefix + "/shm-ok/" + std::to_string(rank), ok ? "1" : "0"));
  bool all = true;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    StatusOr<std::string> vote = GetAbortably(store, prefix + "/shm-ok/" + std::to_string(r), deadline, health);
    if (!vote.ok()) return vote.status();
    all = all && *vote == "1";
  }
  // Everyone who could map this segment has: the name is no longer needed.
  if (segments[rank]) segments[rank]->Unlink();
  if (!all || !ok) return std::unique_ptr<ShmAllreduce>();
  return std::unique_ptr<ShmAllreduce>(new ShmAllreduce(rank, size, slot_bytes, std::move(segments)));
}

ShmAllreduce::ShmAllreduce(int rank, int size, size_t slot_bytes, std::vector<std::unique_ptr<ShmSegment>> segments)
    : rank_(rank), size_(size), slot_bytes_(slot_bytes), segments_(std::move(segments)) {}

ShmAllreduce::~ShmAllreduce() { MarkFailed(); }

ShmAllreduce::Header* ShmAllreduce::header(int r) const { return static_cast<Header*>(segments_[r]->data()); }

uint8_t* ShmAllreduce::slot(int r, uint64_t window) const {
  return static_cast<uint8_t*>(segments_[r]->data()) + kHeaderBytes + (window & 1) * slot_bytes_;
}

void ShmAllreduce::MarkFailed() {
  Header* h = header(rank_);
  Ref(h->failed).store(1);
  Futex(&h->progress, FUTEX_WAKE, INT_MAX, nullptr);
}

void ShmAllreduce::Publish(uint32_t progress) {
  Header* h = header(rank_);
  // Both seq_cst, as the waiter's increment of `waiters` and its re-read of `progress` are: either it sees
  // the new value or this sees it waiting.
  Ref(h->progress).store(progress);
  if (Ref(h->waiters).load() != 0) Futex(&h->progress, FUTEX_WAKE, INT_MAX, nullptr);
}

Status ShmAllreduce::WaitFor(int peer, uint32_t target, Clock::time_point deadline,
                             const std::function<Status()>& health) {
  Header* h = header(peer);
  auto progress = Ref(h->progress);
  for (int i = 0; i < kSpins; ++i) {
    if (Reached(progress.load(std::memory_order_acquire), target)) return Status::Ok();
    CpuRelax();
  }
  for (int i = 0; i < kYields; ++i) {
    if (Reached(progress.load(std::memory_order_acquire), target)) return Status::Ok();
    ::sched_yield();
  }
  const bool same_pid_ns = h->pid_ns != 0 && h->pid_ns == PidNamespace();
  const std::string who = "shared-memory allreduce: rank " + std::to_string(peer);
  for (;;) {
    // Progress first: a peer that finished the collective and then left (its destructor marks it failed)
    // has still done its part.
    if (Reached(progress.load(std::memory_order_acquire), target)) return Status::Ok();
    // Any peer, not only this one: the peer waited for may itself wait for the one that failed.
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && Ref(header(r)->failed).load() != 0) {
        return AbortedError("shared-memory allreduce: rank " + std::to_string(r) + " failed or left");
      }
    }
    RINGMASTER_RETURN_IF_ERROR(health());
    if (same_pid_ns && ::kill(static_cast<pid_t>(h->pid), 0) != 0 && errno == ESRCH) {
      return AbortedError(who + " (pid " + std::to_string(h->pid) + ") is gone");
    }
    const auto now = Clock::now();
    if (now >= deadline) return AbortedError(who + " did not arrive within the collective's timeout");
    const auto nap = std::min<Clock::duration>(kSlice, deadline - now);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(nap).count();
    struct timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    Ref(h->waiters).fetch_add(1);
    const uint32_t seen = progress.load();
    if (!Reached(seen, target)) Futex(&h->progress, FUTEX_WAIT, seen, &ts);
    Ref(h->waiters).fetch_sub(1);
    if (Reached(progress.load(std::memory_order_acquire), target)) return Status::Ok();
  }
}

Status ShmAllreduce::WaitAll(uint32_t target, Clock::time_point deadline, const std::function<Status()>& health) {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) RINGMASTER_RETURN_IF_ERROR(WaitFor(r, target, deadline, health));
  }
  return Status::Ok();
}

Status ShmAllreduce::Run(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op,
                         std::chrono::milliseconds timeout, const std::function<Status()>& health) {
  const auto deadline = Clock::now() + timeout;
  const size_t esize = common::DataTypeSize(type);
  const size_t total = count * esize;
  if (total == 0) return Status::Ok();
  const size_t chunk_bytes = GlooRingChunkBytes(size_, total, esize);
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  const size_t n = static_cast<size_t>(size_);
  std::vector<const void*> inputs(n);
  for (size_t off = 0; off < total; off += slot_bytes_) {
    const size_t len = std::min(slot_bytes_, total - off);
    const uint64_t w = windows_++;
    const uint32_t base = static_cast<uint32_t>(3 * w);
    // This slot was last used by window w-2: every rank must have copied its result out.
    if (w >= 2) RINGMASTER_RETURN_IF_ERROR(WaitAll(base - 3, deadline, health));
    std::memcpy(slot(rank_, w), src + off, len);
    Publish(base + 1);
    RINGMASTER_RETURN_IF_ERROR(WaitAll(base + 1, deadline, health));

    // This rank's part of the window (64-byte aligned, so a multiple of the element size), split where
    // the ring's chunks change: each chunk has its own order of ranks.
    const size_t part = ((len + n - 1) / n + 63) & ~size_t{63};
    auto part_of = [&](size_t r) { return std::make_pair(std::min(r * part, len), std::min((r + 1) * part, len)); };
    auto [begin, end] = part_of(static_cast<size_t>(rank_));
    for (size_t at = begin; at < end;) {
      const size_t chunk = (off + at) / chunk_bytes;
      const size_t stop = std::min(end, (chunk + 1) * chunk_bytes - off);
      // x[c] op (x[c+1] op (... op x[c-1])): inputs in the order c, c+1, ..., c-1 (mod n).
      for (size_t j = 0; j < n; ++j) inputs[j] = slot(static_cast<int>((chunk + j) % n), w) + at;
      common::ReduceChain(type, op, slot(rank_, w) + at, inputs.data(), n, (stop - at) / esize);
      at = stop;
    }
    Publish(base + 2);
    RINGMASTER_RETURN_IF_ERROR(WaitAll(base + 2, deadline, health));
    for (size_t r = 0; r < n; ++r) {
      auto [b, e] = part_of(r);
      if (e > b) std::memcpy(dst + off + b, slot(static_cast<int>(r), w) + b, e - b);
    }
    Publish(base + 3);
  }
  return Status::Ok();
}

}  // namespace ringmaster::gloo
