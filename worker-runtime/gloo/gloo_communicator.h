// The CPU backend: a Communicator over a Gloo TCP context.
//
// Every Gloo call runs under the communicator's timeout; Gloo exceptions
// (IoException, EnforceNotMet, anything else) are caught here and become
// Aborted. After the first failure the Gloo context is torn down and its
// connections hung up, so that peers blocked on this rank fail fast too. Abort
// (from any thread) interrupts the context's sockets (gloo_abort.h): a
// collective in flight fails at once with Aborted.
//
// Signals: Gloo writes to sockets without MSG_NOSIGNAL, so the first Create
// sets SIGPIPE to SIG_IGN when it still has the default (killing) action.
//
// Point-to-point: gloo_transfer.h, on this communicator's context.
//
// Thread-safety: as Communicator (one caller at a time; Abort, PostSend and
// PostRecv from any thread).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/gloo/allreduce_algorithm.h"
#include "worker-runtime/gloo/gloo_abort.h"
#include "worker-runtime/store/store.h"

namespace gloo {
class Context;
namespace transport {
class Device;
}
}  // namespace gloo

namespace ringmaster::gloo {

class ShmAllreduce;

// Small allreduces over TCP between 3 or more ranks (the engine's negotiation, the restore's, a small step's):
// Gloo's ring takes 2 x (at least 2n) dependent steps, each waiting for a neighbour to be scheduled, whatever
// the size -- on a loaded machine that latency is the whole cost. Instead every rank sends its buffer to every
// other at once (one step) and adds all of them itself, chunk by chunk in the ring's order
// (GlooRingChunkBytes), so the result stays bit-identical to the ring's (torch's Gloo). Each rank sends
// (n-1) x the buffer where the ring sends 2(n-1)/n x: only while that stays this small.
inline constexpr size_t kExchangeMaxSendBytes = 256 * 1024;

struct GlooOptions {
  std::string host = "127.0.0.1";            // address this rank listens on for peers
  std::chrono::milliseconds timeout{30000};  // per collective and for rendezvous
  // Allreduce: kExact (default) is bit-identical to torch's Gloo; kBcube (opt-in) lets ranks that cannot
  // share memory run BCube over TCP where it is faster, adding in another order (allreduce_algorithm.h).
  // Every rank must pass the same.
  AllreducePolicy allreduce = AllreducePolicy::kExact;
  // Ranks on one host allreduce through shared memory (shm_allreduce.h), set up at the first allreduce;
  // false: always TCP. Every rank must pass the same.
  bool shared_memory = true;
  // Over TCP, 3 or more ranks: an allreduce where every rank sends at most this many bytes in all (its
  // buffer to each of the others) is one exchange instead of the ring (see kExchangeMaxSendBytes); 0: always
  // the ring. Every rank must pass the same.
  size_t exchange_max_send_bytes = kExchangeMaxSendBytes;
};

class GlooCommunicator : public comm::Communicator {
 public:
  // Rendezvous of `size` ranks under store key prefix `prefix` (unique per
  // communicator within a generation). Errors: Aborted or DeadlineExceeded
  // (peers did not show up), InvalidArgument.
  static StatusOr<std::unique_ptr<comm::Communicator>> Create(std::shared_ptr<store::Store> store, std::string prefix,
                                                              int rank, int size, GlooOptions options);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  comm::Backend backend() const override { return comm::Backend::kGloo; }
  comm::MemoryKind memory() const override { return comm::MemoryKind::kHost; }

  void Abort(const std::string& reason) override;
  Status health() const override;

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override;
  Status DoAllgather(const void* in, void* out, size_t count, common::DataType type) override;
  Status DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts, common::DataType type) override;
  Status DoBroadcast(const void* in, void* out, size_t count, common::DataType type, int root) override;
  Status DoReduceScatter(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override;
  Status DoAlltoall(const void* in, void* out, size_t count, common::DataType type) override;
  Status DoBarrier() override;
  StatusOr<std::unique_ptr<comm::Communicator>> DoSplit(const std::vector<int>& ranks,
                                                        const std::string& name) override;
  StatusOr<std::unique_ptr<comm::Transfer>> DoPostSend(const void* buf, size_t bytes, int peer, uint32_t tag) override;
  StatusOr<std::unique_ptr<comm::Transfer>> DoPostRecv(void* buf, size_t bytes, int peer, uint32_t tag) override;

 private:
  static StatusOr<std::unique_ptr<comm::Communicator>> CreateOnDevice(
      std::shared_ptr<store::Store> store, std::string prefix, int rank, int size, GlooOptions options,
      std::shared_ptr<::gloo::transport::Device> device);
  GlooCommunicator(std::shared_ptr<store::Store> store, std::string prefix, int rank, int size, GlooOptions options,
                   std::shared_ptr<::gloo::transport::Device> device, std::shared_ptr<::gloo::Context> context,
                   GlooSockets sockets);
  // Runs fn (which calls into Gloo) unless broken; converts exceptions to Aborted.
  template <typename F>
  Status Guard(const char* what, F&& fn);
  Status RingReduceScatter(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op);
  Status PairExchangeAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op);
  // kExchangeMaxSendBytes: every rank's buffer to every rank, then each adds them in the ring's order.
  Status ExchangeAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op);
  // Whether this communicator's ranks share memory: set up once (a collective step through the store).
  StatusOr<bool> SharedMemoryReady();

  // Constant after construction.
  const std::shared_ptr<store::Store> store_;
  const std::string prefix_;
  const int rank_;
  const int size_;
  const GlooOptions options_;
  const std::shared_ptr<::gloo::transport::Device> device_;
  const GlooSockets sockets_;  // the context's sockets, for Abort from any thread (held past context_)
  // Our own collectives' buffers while waited on, for Abort from any thread (gloo_abort.h). Thread-safe.
  mutable PendingWaits waits_;

  // Read by the calling thread without a lock, by point-to-point calls under
  // mu_; reset (under mu_) on failure, by the calling thread only.
  std::shared_ptr<::gloo::Context> context_;

  // Used only by the calling thread: the peer's buffer in a two-rank allreduce (allreduce_algorithm.h), every
  // rank's in an exchange allreduce.
  std::vector<uint8_t> scratch_;
  // Used only by the calling thread: the same-host allreduce, once set up (null: TCP), and whether it was.
  std::unique_ptr<ShmAllreduce> shm_;
  bool shm_tried_ = false;

  mutable std::mutex mu_;
  // Guarded by mu_.
  Status broken_;  // OK while usable
};

}  // namespace ringmaster::gloo
