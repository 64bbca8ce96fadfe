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
// by address right after the context connected. Shutdown() shuts each one down
// (shutdown(2), SHUT_RDWR): the device's event loop then sees end-of-file and
// fails the pair exactly as when a peer dies (every send and receive pending on
// it raises gloo::IoException in the thread waiting for it), and every peer sees
// its end of the connection close at the same moment. Only public Gloo API and
// POSIX calls are used: Gloo keeps its sockets private.
//
// Because the duplicates keep the sockets open, a connection ends (FIN) only
// when both Gloo and this object let go of it: shut down (Shutdown) or close
// (destructor) after Gloo closes its pairs, as GlooCommunicator does.
//
// Errors: none; a socket that cannot be found is not held (Shutdown then does
// not reach it, and that pair fails at Gloo's timeout as before).
// Ownership: owns the duplicate descriptors. Thread-safety: Shutdown() may be
// called from any thread, concurrently with itself and with collectives on the
// context; construction and destruction need exclusive access.
#pragma once

#include <string>
#include <vector>

namespace gloo {
class Context;
}  // namespace gloo

namespace ringmaster::runtime {

class GlooSockets {
 public:
  GlooSockets() = default;
  // Finds the connected sockets of `context` (just connected by connectFullMesh) in this process's
  // descriptor table: the socket of pair i has this rank's address for it on its near end, or on its
  // far end the address rank i published for its pair with this rank. `published[i]` is rank i's
  // value under its own key in the rendezvous (Gloo's layout: its pairs' addresses in rank order,
  // itself skipped); empty for this rank or when unknown.
  static GlooSockets Find(gloo::Context& context, const std::vector<std::vector<char>>& published);
  ~GlooSockets();
  GlooSockets(GlooSockets&& other) noexcept;
  GlooSockets& operator=(GlooSockets&& other) noexcept;
  GlooSockets(const GlooSockets&) = delete;
  GlooSockets& operator=(const GlooSockets&) = delete;

  // Shuts every held socket down. Idempotent.
  void Shutdown() const noexcept;
  // How many sockets are held (size - 1 for a fully found context).
  size_t count() const { return fds_.size(); }

 private:
  void CloseAll() noexcept;
  std::vector<int> fds_;  // duplicates, owned
};

}  // namespace ringmaster::runtime
