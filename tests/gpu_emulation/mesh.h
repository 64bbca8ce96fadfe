// A communicator's full mesh of TCP connections (its "transport"): one connection per peer (the
// lower rank connects to the higher), one reader thread that pushes every whole tagged message into
// a mailbox per (peer, tag) -- unbounded buffering, so a send never waits for its peer to post a
// receive -- and receives that wait, polling the caller's abort flags.
//
// A dead peer (its process killed) shows as the end of its connection: its mailbox simply gets
// nothing more, so a receive from it waits -- as an NVLink/IB transfer hangs -- until the caller
// aborts; sends to it are dropped. Messages carry a 64-bit tag (tags.h); an aborted operation's tags
// are discarded, so its late messages never reach a later operation.
//
// Ownership: shared by the communicator and the work it has queued on streams; Shutdown (or the
// destructor) closes the connections and joins the reader.
// Thread-safety: Send, Recv, Discard are safe from any thread (sends to one peer are serialised).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/net.h"

namespace gpuemu {

struct Message {
  std::unique_ptr<char[]> data;
  size_t size = 0;
};

class Mesh {
 public:
  // Connects to the higher ranks' addresses, accepts the lower ranks on listen_fd (closed here in
  // every case); `magic` identifies the communicator (a connection made for another is refused).
  // ncclInternalError when aborted (the caller's abort flags), ncclSuccess with *out otherwise.
  static ncclResult_t Build(int rank, const std::vector<WireAddr>& addrs, uint64_t magic, int listen_fd,
                            const AbortCheck& abort, std::shared_ptr<Mesh>* out);
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  // The local address this rank's connections use (children listen there).
  const WireAddr& local_ip() const { return local_ip_; }

  // Sends one message (to itself: straight into its mailbox). A message to a peer that is gone is
  // dropped; an abort in the middle of a message breaks that connection.
  void Send(int peer, uint64_t tag, const void* data, size_t bytes, const AbortCheck& abort);
  // The next message with `tag` from `peer`; false when aborted first.
  bool Recv(int peer, uint64_t tag, Message* out, const AbortCheck& abort);
  // The next message with `tag` from any peer (its rank in *from); false when aborted first.
  bool RecvAny(uint64_t tag, Message* out, int* from, const AbortCheck& abort);
  // Drops the messages with these tags, now and when they arrive later.
  void Discard(const std::vector<uint64_t>& tags);
  void Shutdown();

 private:
  struct Peer {
    int fd = -1;
    std::mutex send_mu;
    bool broken = false;  // under send_mu: no more sends
    // the reader's state (reader thread only)
    bool eof = false;
    unsigned char header[16];
    size_t header_got = 0;
    Message msg;
    uint64_t tag = 0;
    size_t got = 0;
  };

  Mesh(int rank, const std::vector<int>& fds, WireAddr local_ip);
  void ReaderLoop();
  bool ReadFrom(int peer);  // false: end of connection
  void Deliver(int peer, uint64_t tag, Message msg);

  const int rank_;
  const WireAddr local_ip_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::mutex mu_;
  std::condition_variable arrived_;
  std::vector<std::map<uint64_t, std::deque<Message>>> boxes_;  // per source peer
  std::set<uint64_t> discarded_;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::mutex shutdown_mu_;
  std::thread reader_;
};

}  // namespace gpuemu
