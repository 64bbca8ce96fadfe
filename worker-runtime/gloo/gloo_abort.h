// Interrupting a Gloo TCP context from another thread.
//
// Gloo has no cross-thread abort: a thread blocked in a collective waits for
// its data or its timeout. Closing a pair (Pair::close, or destroying the
// context) wakes no local waiter, and it is slow: every close waits for a tick
// of the device's event loop, up to 10 ms when the loop is idle, so tearing a
// context of n ranks down took ~10 ms x (n - 1) and its peers saw their
// connections end one by one (each then failing its own peers in turn).
//
// GlooSockets holds a duplicate of every connected socket of a context, found
// by address right after the context connected. Interrupt() shuts their
// reading side down (shutdown(2), SHUT_RD): the device's event loop then reads
// end-of-file and fails each pair exactly as when a peer dies, so every send
// and receive pending on it raises gloo::IoException in the thread waiting for
// it. The writing side stays open: a send that Gloo is issuing at that moment
// still completes (Gloo drops an operation whose write fails, and its waiter
// would then wait for the timeout). Hangup() shuts the writing side down, so
// the peers see their connections end: call it once nothing of this rank can
// be writing (the context is destroyed). Hangup() does nothing after
// Interrupt(): a socket shut both ways answers a peer's later write with a
// reset, and Gloo loses a write that fails (its waiter then waits for the
// timeout); an interrupted context's peers learn otherwise (their own abort, or
// the close when this object goes). Only public Gloo API and POSIX calls are
// used: Gloo keeps its sockets private.
//
// Because the duplicates keep the sockets open, a connection ends (FIN) only
// when both Gloo and this object let go of it: Hangup(), or the destructor.
//
// Limits: matching is by address, so a socket of an older Gloo context whose
// ephemeral port a new pair's listener reuses (Gloo sets SO_REUSEADDR) can be
// held too; interrupting it is harmless when that context was aborted already,
// as the elastic driver's are.
//
// Errors: none; a socket that cannot be found is not held (Interrupt then does
// not reach it, and that pair fails at Gloo's timeout as before).
// Ownership: owns the duplicate descriptors. Thread-safety: Interrupt() and
// Hangup() may be called from any thread, concurrently with each other and with
// collectives on the context; construction and destruction need exclusive access.
#pragma once

#include <atomic>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace ringmaster::gloo {

class GlooSockets {
 public:
  GlooSockets() = default;
  // Finds the connected sockets of `context` (just connected by connectFullMesh) in this process's
  // descriptor table: the socket of pair i has this rank's address for it on its near end, or on its
  // far end the address rank i published for its pair with this rank. `published[i]` is rank i's
  // value under its own key in the rendezvous (Gloo's layout: its pairs' addresses in rank order,
  // itself skipped); empty for this rank or when unknown.
  static GlooSockets Find(::gloo::Context& context, const std::vector<std::vector<char>>& published);
  ~GlooSockets();
  GlooSockets(GlooSockets&& other) noexcept;
  GlooSockets& operator=(GlooSockets&& other) noexcept;
  GlooSockets(const GlooSockets&) = delete;
  GlooSockets& operator=(const GlooSockets&) = delete;

  // Fails every operation pending on the context, here, at once (SHUT_RD). Idempotent.
  void Interrupt() const noexcept;
  // Ends every held connection for the peers (SHUT_WR), unless Interrupt() came first. Idempotent.
  void Hangup() const noexcept;
  // How many sockets are held (size - 1 for a fully found context).
  size_t count() const { return fds_.size(); }

 private:
  void CloseAll() noexcept;
  std::vector<int> fds_;  // duplicates, owned; constant after Find
  mutable std::atomic<bool> interrupted_{false};
};

// PendingWaits: the unbound buffers of our own collectives (not Gloo's algorithms, which keep theirs
// private) while a thread may wait on them. Abort() aborts their waits (UnboundBuffer::abortWaitRecv and
// abortWaitSend), so the waiter returns at once. GlooSockets::Interrupt() cannot wake it when Gloo has
// already dropped the operation after a failed write -- a peer killed while this rank was sending to it --
// because the pair no longer reports anything for that operation (seen as a 20 s stall, the timeout, in
// about one two-rank rebuild in 60). After Abort(), buffers tracked later are aborted as they come.
// Thread-safety: thread-safe. Ownership: borrows the buffers for a Scope's lifetime.
class PendingWaits {
 public:
  // Tracks buffers until destroyed; destroy it before the buffers (declare it after them).
  class Scope {
   public:
    Scope(PendingWaits* waits, std::initializer_list<::gloo::transport::UnboundBuffer*> buffers);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PendingWaits* const waits_;
    const std::vector<::gloo::transport::UnboundBuffer*> buffers_;
  };

  // Aborts every tracked buffer's waits, now and for buffers tracked later. Idempotent.
  void Abort();

 private:
  std::mutex mu_;
  bool aborted_ = false;                                      // guarded by mu_
  std::multiset<::gloo::transport::UnboundBuffer*> tracked_;  // guarded by mu_
};

}  // namespace ringmaster::gloo
