// The bootstrap of a communicator, as NCCL's bootstrap.cc: ncclGetUniqueId (and, for a grow,
// ncclCommGetUniqueId) starts a root -- a listener thread in the calling process -- and writes its
// address and a random magic into the ncclUniqueId. Each rank connects to the root and sends its
// PeerInfo (rank, nranks, its own listening address, host, device); once all nranks have arrived the
// root answers every rank with the whole table and ends. A rank that never arrives keeps the others
// waiting (their init stays ncclInProgress) until they abort.
//
// Ownership: roots live in a process-wide table (never freed). The init of a rank whose process holds
// the root waits for the root to answer everyone and joins it; a root no rank here used is joined at
// the next ncclGetUniqueId once finished; a communicator torn down while its root still waits stops
// and joins it.
// Thread-safety: everything here is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/net.h"

namespace gpuemu {

// What a unique id holds (the first bytes of ncclUniqueId::internal; the rest is zero).
struct IdHandle {
  char signature[8] = {};
  uint64_t magic = 0;
  WireAddr root;
};

void EncodeId(const IdHandle& h, ncclUniqueId* out);
// false when the id was not made by this emulation (zeroed, corrupted, or from a real NCCL).
bool DecodeId(const ncclUniqueId& id, IdHandle* out);
uint64_t RandomMagic();

// One rank, as it tells the root (a fixed-size wire struct).
struct PeerInfo {
  uint64_t magic = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
  WireAddr addr;           // where this rank accepts mesh connections
  uint64_t host_hash = 0;  // settings.h
  int32_t cuda_dev = -1;   // the visible index
  int32_t phys_dev = -1;   // the emulated GPU behind it
  int32_t pid = 0;
  char host[64] = {};
};

class BootstrapRoot {
 public:
  BootstrapRoot(int listen_fd, uint64_t magic);
  ~BootstrapRoot();
  uint64_t magic() const { return magic_; }
  bool Finished() const { return finished_.load(); }
  // Ends the root (if still waiting) and joins its thread. Idempotent.
  void StopAndJoin();
  // Waits for the root to end by itself (it has answered every rank), then joins it; false when
  // aborted first.
  bool WaitFinished(const AbortCheck& abort);

 private:
  void Run();
  const int listen_fd_;
  const uint64_t magic_;
  std::shared_ptr<Flag> stop_ = std::make_shared<Flag>(0);
  std::atomic<bool> finished_{false};
  std::mutex join_mu_;
  std::thread thread_;  // last
};

// Starts a root listening on `ip` and fills the handle (signature, magic, address).
ncclResult_t StartRoot(const WireAddr& ip, uint64_t magic, IdHandle* out);
// The root of this process with that magic, if any (a communicator adopts it: see above).
std::shared_ptr<BootstrapRoot> FindLocalRoot(uint64_t magic);
// Stops, joins and forgets a root.
void RetireRoot(const std::shared_ptr<BootstrapRoot>& root);
// Forgets a root that has ended (after WaitFinished).
void ForgetRoot(const std::shared_ptr<BootstrapRoot>& root);
// Joins and forgets the roots that have finished.
void ReapFinishedRoots();

// The rank side, as bootstrapInit: connects to the root, opens this rank's listening socket on the
// address the root is reached from, sends `self` (its addr filled here) and waits for the table.
// On success *listen_fd is the listening socket (the caller builds the mesh on it).
ncclResult_t BootstrapExchange(const IdHandle& id, PeerInfo self, const AbortCheck& abort, int* listen_fd,
                               std::vector<PeerInfo>* table);

}  // namespace gpuemu
