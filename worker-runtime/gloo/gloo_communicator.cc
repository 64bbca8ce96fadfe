#include "worker-runtime/gloo/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "worker-runtime/comm/validate.h"
#include "worker-runtime/common/reduce_kernels.h"
#include "worker-runtime/gloo/allreduce_algorithm.h"
#include "worker-runtime/gloo/gloo_abort.h"
#include "worker-runtime/gloo/gloo_connect.h"
#include "worker-runtime/gloo/gloo_store.h"
#include "worker-runtime/gloo/gloo_transfer.h"
#include "worker-runtime/gloo/shm_allreduce.h"

namespace ringmaster::gloo {
namespace {

// Gloo's typed options only use sizeof(T); these stand in for any element type
// of that width (reduction itself goes through our own ReduceBuffers).
template <size_t N>
struct Storage;
template <>
struct Storage<1> {
  using type = uint8_t;
};
template <>
struct Storage<2> {
  using type = uint16_t;
};
template <>
struct Storage<4> {
  using type = uint32_t;
};
template <>
struct Storage<8> {
  using type = uint64_t;
};

template <typename F>
void WithStorage(common::DataType type, F&& f) {
  switch (common::DataTypeSize(type)) {
    case 1: return f(Storage<1>::type{});
    case 2: return f(Storage<2>::type{});
    case 4: return f(Storage<4>::type{});
    default: return f(Storage<8>::type{});
  }
}

// Gloo's TCP transport writes with plain writev(): a peer that died makes the
// write raise SIGPIPE, whose default action kills this process instead of
// letting the error surface as an exception. Ignore it (as Python, gRPC and
// every server do) unless the program installed its own handler.
void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current{};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

}  // namespace

StatusOr<std::unique_ptr<comm::Communicator>> GlooCommunicator::Create(std::shared_ptr<store::Store> store,
                                                                       std::string prefix, int rank, int size,
                                                                       GlooOptions options) {
  IgnoreSigpipeOnce();
  std::shared_ptr<::gloo::transport::Device> device;
  try {
    ::gloo::transport::tcp::attr attr(options.host.c_str());
    device = ::gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return UnavailableError("gloo: cannot create a TCP device on " + options.host + ": " + e.what());
  }
  return CreateOnDevice(std::move(store), std::move(prefix), rank, size, std::move(options), std::move(device));
}

StatusOr<std::unique_ptr<comm::Communicator>> GlooCommunicator::CreateOnDevice(
    std::shared_ptr<store::Store> store, std::string prefix, int rank, int size, GlooOptions options,
    std::shared_ptr<::gloo::transport::Device> device) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " of size " + std::to_string(size));
  }
  auto failed = [&](const std::string& why) {
    return AbortedError("gloo rendezvous of '" + prefix + "' (rank " + std::to_string(rank) + " of " +
                        std::to_string(size) + ") failed: " + why);
  };
  try {
    // Every pair at once, not Gloo's connectFullMesh chain (gloo_connect.h).
    GlooStore gloo_store(store, prefix, options.timeout);
    MeshOptions mesh_options;
    mesh_options.timeout = options.timeout;
    StatusOr<ConnectedMesh> mesh = ConnectMesh(gloo_store, device, rank, size, mesh_options);
    if (!mesh.ok()) return failed(std::string(mesh.status().message()));
    GlooSockets sockets = GlooSockets::Find(*mesh->context, mesh->published);
    return std::unique_ptr<comm::Communicator>(new GlooCommunicator(
        std::move(store), std::move(prefix), rank, size, options, device, mesh->context, std::move(sockets)));
  } catch (const std::exception& e) {
    return failed(e.what());
  } catch (...) {
    return AbortedError("gloo rendezvous of '" + prefix + "' failed with an unknown exception");
  }
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<store::Store> store, std::string prefix, int rank, int size,
                                   GlooOptions options, std::shared_ptr<::gloo::transport::Device> device,
                                   std::shared_ptr<::gloo::Context> context, GlooSockets sockets)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      options_(std::move(options)),
      device_(std::move(device)),
      sockets_(std::move(sockets)),
      context_(std::move(context)) {}

GlooCommunicator::~GlooCommunicator() {
  try {
    context_.reset();
  } catch (...) {}
}

void GlooCommunicator::Abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.ok()) broken_ = AbortedError("communicator '" + prefix_ + "' aborted: " + reason);
  }
  // A collective in flight on another thread fails now, not at its timeout: through its pairs (Gloo's
  // algorithms), or through its buffers' waits (ours; also when Gloo dropped a send whose write failed).
  sockets_.Interrupt();
  waits_.Abort();
}

Status GlooCommunicator::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

template <typename F>
Status GlooCommunicator::Guard(const char* what, F&& fn) {
  RINGMASTER_RETURN_IF_ERROR(health());
  std::string error;
  try {
    fn();
    return Status::Ok();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  std::shared_ptr<::gloo::Context> closing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.ok()) {
      broken_ = AbortedError("communicator '" + prefix_ + "' aborted: " + what + " failed on rank " +
                             std::to_string(rank_) + ": " + error);
    }
    closing.swap(context_);
  }
  // Once the context is gone nothing here writes to its sockets: hang up, so that peers blocked on us
  // fail now, all at once, instead of at their timeout. (While a point-to-point transfer still holds the
  // context, the connections end with this communicator.)
  const bool last = closing.use_count() == 1;
  try {
    closing.reset();
  } catch (...) {}
  if (last) sockets_.Hangup();
  return health();
}

Status GlooCommunicator::DoAllreduce(const void* in, void* out, size_t count, common::DataType type,
                                     common::ReduceOp op) {
  const size_t bytes = count * common::DataTypeSize(type);
  if (size_ == 1) {
    if (in != out) std::memmove(out, in, bytes);
    return Status::Ok();
  }
  if (!health().ok()) {
    if (shm_) shm_->MarkFailed();  // peers waiting in shared memory for this rank fail now, not at their timeout
    return health();
  }
  bool shared_memory = false;
  if (options_.shared_memory && (shm_tried_ || bytes >= kSharedMemorySetupMinBytes)) {
    StatusOr<bool> ready = SharedMemoryReady();
    if (!ready.ok()) {
      return Guard("allreduce", [&] { throw ::gloo::Exception("shared-memory setup: " + ready.status().ToString()); });
    }
    shared_memory = *ready;
  }
  const GlooAllreduceAlgorithm algorithm = ChooseGlooAllreduce(size_, bytes, options_.allreduce, shared_memory);
  const bool exchange = algorithm == GlooAllreduceAlgorithm::kRing && size_ >= 3 &&
                        bytes * static_cast<size_t>(size_ - 1) <= options_.exchange_max_send_bytes;
  Status status = Guard("allreduce", [&] {
    if (exchange) {
      Status s = ExchangeAllreduce(in, out, count, type, op);
      if (!s.ok()) throw ::gloo::Exception(s.ToString());
      return;
    }
    if (algorithm == GlooAllreduceAlgorithm::kSharedMemory) {
      // The ring's order of additions without the ring's sockets (shm_allreduce.h).
      Status s = shm_->Run(in, out, count, type, op, options_.timeout, [this] { return health(); });
      if (!s.ok()) throw ::gloo::Exception(s.ToString());
      if (op == common::ReduceOp::kAvg) common::FinishAverage(type, out, count, size_);
      return;
    }
    if (algorithm == GlooAllreduceAlgorithm::kPairExchange) {
      Status s = PairExchangeAllreduce(in, out, count, type, op);
      if (!s.ok()) throw ::gloo::Exception(s.ToString());
      return;
    }
    WithStorage(type, [&](auto tag) {
      using T = decltype(tag);
      ::gloo::AllreduceOptions opts(context_);
      if (in != out) opts.setInput<T>(static_cast<T*>(const_cast<void*>(in)), count);
      opts.setOutput<T>(static_cast<T*>(out), count);
      opts.setReduceFunction(
          [type, op](void* o, const void* a, const void* b, size_t n) { common::ReduceBuffers(type, op, o, a, b, n); });
      opts.setTimeout(options_.timeout);
      if (algorithm == GlooAllreduceAlgorithm::kBcube) {
        opts.setAlgorithm(::gloo::AllreduceOptions::Algorithm::BCUBE);  // the opt-in: not torch's order
      }
      ::gloo::allreduce(opts);  // the ring, as torch's ProcessGroupGloo: the same sums in the same order
    });
    if (op == common::ReduceOp::kAvg) common::FinishAverage(type, out, count, size_);
  });
  if (!status.ok() && shm_) shm_->MarkFailed();
  return status;
}

// The first allreduce sets shared memory up for all later ones; every rank reaches it (a collective), and
// all of them agree (ShmAllreduce::Connect). A store error breaks the communicator like a failed collective.
StatusOr<bool> GlooCommunicator::SharedMemoryReady() {
  if (!shm_tried_) {
    shm_tried_ = true;
    RINGMASTER_ASSIGN_OR_RETURN(
        shm_, ShmAllreduce::Connect(*store_, prefix_, rank_, size_, ShmAllreduce::DefaultSlotBytes(size_),
                                    options_.timeout, [this] { return health(); }));
  }
  return shm_ != nullptr;
}

// Two ranks: each sends its whole buffer to the other and receives the other's into scratch_, then both
// compute op(rank 0's, rank 1's) in that order, so min/max with NaNs and every rounding agree bit for bit.
Status GlooCommunicator::PairExchangeAllreduce(const void* in, void* out, size_t count, common::DataType type,
                                               common::ReduceOp op) {
  const size_t bytes = count * common::DataTypeSize(type);
  if (in != out) std::memcpy(out, in, bytes);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  auto mine = context_->createUnboundBuffer(out, bytes);
  auto theirs = context_->createUnboundBuffer(scratch_.data(), bytes);
  const int peer = 1 - rank_;
  const uint64_t slot = static_cast<uint64_t>(context_->nextSlot());
  PendingWaits::Scope tracked(&waits_, {mine.get(), theirs.get()});
  theirs->recv(peer, slot);
  mine->send(peer, slot);
  if (!theirs->waitRecv(options_.timeout)) return AbortedError("allreduce receive aborted");
  if (!mine->waitSend(options_.timeout)) return AbortedError("allreduce send aborted");
  if (rank_ == 0) {
    common::ReduceBuffers(type, op, out, out, scratch_.data(), count);
  } else {
    common::ReduceBuffers(type, op, out, scratch_.data(), out, count);
  }
  if (op == common::ReduceOp::kAvg) common::FinishAverage(type, out, count, size_);
  return Status::Ok();
}

// Every rank sends its buffer to every other (one step) into scratch_ (rank r's at r x bytes), then computes
// the whole result itself: chunk c of Gloo's ring (GlooRingChunkBytes) is x[c] op (x[c+1] op (... x[c-1])),
// the order ReduceChain folds its inputs in, as the shared-memory path does.
Status GlooCommunicator::ExchangeAllreduce(const void* in, void* out, size_t count, common::DataType type,
                                           common::ReduceOp op) {
  const size_t esize = common::DataTypeSize(type);
  const size_t bytes = count * esize;
  if (bytes == 0) return Status::Ok();
  const size_t n = static_cast<size_t>(size_);
  if (scratch_.size() < n * bytes) scratch_.resize(n * bytes);
  uint8_t* all = scratch_.data();
  std::memcpy(all + static_cast<size_t>(rank_) * bytes, in, bytes);
  auto buffer = context_->createUnboundBuffer(all, n * bytes);
  const uint64_t slot = static_cast<uint64_t>(context_->nextSlot());
  PendingWaits::Scope tracked(&waits_, {buffer.get()});
  for (size_t d = 1; d < n; ++d) {  // a ring's order: the peers' sends are spread out
    const int from = static_cast<int>((static_cast<size_t>(rank_) + n - d) % n);
    const int to = static_cast<int>((static_cast<size_t>(rank_) + d) % n);
    buffer->recv(from, slot, static_cast<size_t>(from) * bytes, bytes);
    buffer->send(to, slot, static_cast<size_t>(rank_) * bytes, bytes);
  }
  for (size_t d = 1; d < n; ++d) {
    if (!buffer->waitRecv(options_.timeout)) return AbortedError("allreduce receive aborted");
  }
  for (size_t d = 1; d < n; ++d) {
    if (!buffer->waitSend(options_.timeout)) return AbortedError("allreduce send aborted");
  }
  const size_t chunk_bytes = GlooRingChunkBytes(size_, bytes, esize);
  auto* dst = static_cast<uint8_t*>(out);
  std::vector<const void*> inputs(n);
  for (size_t c = 0, at = 0; at < bytes; ++c, at += chunk_bytes) {
    const size_t len = std::min(chunk_bytes, bytes - at);
    for (size_t j = 0; j < n; ++j) inputs[j] = all + ((c + j) % n) * bytes + at;
    common::ReduceChain(type, op, dst + at, inputs.data(), n, len / esize);
  }
  if (op == common::ReduceOp::kAvg) common::FinishAverage(type, out, count, size_);
  return Status::Ok();
}

Status GlooCommunicator::DoAllgather(const void* in, void* out, size_t count, common::DataType type) {
  const size_t bytes = count * common::DataTypeSize(type);
  auto* o = static_cast<uint8_t*>(out);
  if (size_ == 1) {
    if (in != out) std::memmove(out, in, bytes);
    return Status::Ok();
  }
  // In-place (in is this rank's block of out) or any other overlap: gather from a copy.
  std::vector<uint8_t> copy;
  const void* src = in;
  if (comm::Overlaps(in, bytes, out, bytes * size_)) {
    copy.assign(static_cast<const uint8_t*>(in), static_cast<const uint8_t*>(in) + bytes);
    src = copy.data();
  }
  return Guard("allgather", [&] {
    ::gloo::AllgatherOptions opts(context_);
    opts.setInput<uint8_t>(static_cast<uint8_t*>(const_cast<void*>(src)), bytes);
    opts.setOutput<uint8_t>(o, bytes * size_);
    opts.setTimeout(options_.timeout);
    ::gloo::allgather(opts);
  });
}

Status GlooCommunicator::DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                                      common::DataType type) {
  const size_t esize = common::DataTypeSize(type);
  const size_t my_bytes = counts[rank_] * esize;
  if (size_ == 1) {
    if (in != out && my_bytes > 0) std::memmove(out, in, my_bytes);
    return Status::Ok();
  }
  // Gather from a copy (in may be this rank's block of out); never from a null pointer, even for 0 bytes.
  std::vector<uint8_t> copy(std::max<size_t>(my_bytes, 1));
  if (my_bytes > 0) std::memcpy(copy.data(), in, my_bytes);
  std::vector<size_t> byte_counts;
  for (size_t c : counts) byte_counts.push_back(c * esize);
  return Guard("allgatherv", [&] {
    ::gloo::AllgathervOptions opts(context_);
    opts.setInput<uint8_t>(copy.data(), my_bytes);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(out), byte_counts);
    opts.setTimeout(options_.timeout);
    ::gloo::allgatherv(opts);
  });
}

Status GlooCommunicator::DoBroadcast(const void* in, void* out, size_t count, common::DataType type, int root) {
  const size_t bytes = count * common::DataTypeSize(type);
  if (size_ == 1) {
    if (in != out) std::memmove(out, in, bytes);
    return Status::Ok();
  }
  return Guard("broadcast", [&] {
    ::gloo::BroadcastOptions opts(context_);
    if (rank_ == root && in != out) opts.setInput<uint8_t>(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(out), bytes);
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    ::gloo::broadcast(opts);
  });
}

Status GlooCommunicator::DoReduceScatter(const void* in, void* out, size_t count, common::DataType type,
                                         common::ReduceOp op) {
  if (size_ == 1) {
    if (in != out) std::memmove(out, in, count * common::DataTypeSize(type));
    return Status::Ok();
  }
  return Guard("reduce-scatter", [&] {
    Status s = RingReduceScatter(in, out, count, type, op);
    if (!s.ok()) throw ::gloo::Exception(s.ToString());
  });
}

// Ring reduce-scatter: in step s, rank r sends its partial sum of block
// (r-s-1) mod n to the right and folds the left's partial sum of block
// (r-s-2) mod n into its own. After n-1 steps block r holds the full result.
// Each rank sends (n-1)/n of the buffer, the optimum.
Status GlooCommunicator::RingReduceScatter(const void* in, void* out, size_t count, common::DataType type,
                                           common::ReduceOp op) {
  const size_t esize = common::DataTypeSize(type);
  const size_t block = count * esize;
  const int n = size_;
  std::vector<uint8_t> acc(static_cast<const uint8_t*>(in), static_cast<const uint8_t*>(in) + block * n);
  std::vector<uint8_t> tmp(block);
  auto acc_buf = context_->createUnboundBuffer(acc.data(), acc.size());
  auto tmp_buf = context_->createUnboundBuffer(tmp.data(), tmp.size());
  PendingWaits::Scope tracked(&waits_, {acc_buf.get(), tmp_buf.get()});
  const int right = (rank_ + 1) % n;
  const int left = (rank_ + n - 1) % n;
  const uint64_t slot = static_cast<uint64_t>(context_->nextSlot());
  for (int s = 0; s < n - 1; ++s) {
    const size_t send_block = static_cast<size_t>((rank_ - s - 1 + 2 * n) % n);
    const size_t recv_block = static_cast<size_t>((rank_ - s - 2 + 2 * n) % n);
    acc_buf->send(right, slot, send_block * block, block);
    tmp_buf->recv(left, slot, 0, block);
    if (!tmp_buf->waitRecv(options_.timeout)) return AbortedError("reduce-scatter receive aborted");
    common::ReduceBuffers(type, op, acc.data() + recv_block * block, acc.data() + recv_block * block, tmp.data(),
                          count);
    if (!acc_buf->waitSend(options_.timeout)) return AbortedError("reduce-scatter send aborted");
  }
  std::memcpy(out, acc.data() + static_cast<size_t>(rank_) * block, block);
  if (op == common::ReduceOp::kAvg) common::FinishAverage(type, out, count, size_);
  return Status::Ok();
}

Status GlooCommunicator::DoAlltoall(const void* in, void* out, size_t count, common::DataType type) {
  const size_t bytes = count * common::DataTypeSize(type) * size_;
  if (size_ == 1) {
    if (in != out) std::memmove(out, in, bytes);
    return Status::Ok();
  }
  std::vector<uint8_t> copy;
  const void* src = in;
  if (comm::Overlaps(in, bytes, out, bytes)) {
    copy.assign(static_cast<const uint8_t*>(in), static_cast<const uint8_t*>(in) + bytes);
    src = copy.data();
  }
  return Guard("alltoall", [&] {
    ::gloo::AlltoallOptions opts(context_);
    opts.setInput<uint8_t>(static_cast<uint8_t*>(const_cast<void*>(src)), bytes);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(out), bytes);
    opts.setTimeout(options_.timeout);
    ::gloo::alltoall(opts);
  });
}

Status GlooCommunicator::DoBarrier() {
  if (size_ == 1) return Status::Ok();
  return Guard("barrier", [&] {
    ::gloo::BarrierOptions opts(context_);
    opts.setTimeout(options_.timeout);
    ::gloo::barrier(opts);
  });
}

StatusOr<std::unique_ptr<comm::Communicator>> GlooCommunicator::DoSplit(const std::vector<int>& ranks,
                                                                        const std::string& name) {
  // Gloo needs no collective over the parent: members rendezvous among themselves.
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == rank_) {
      // Same TCP device (and its event loop thread) as the parent.
      return CreateOnDevice(store_, prefix_ + "/set/" + name, static_cast<int>(i), static_cast<int>(ranks.size()),
                            options_, device_);
    }
  }
  return std::unique_ptr<comm::Communicator>();
}

StatusOr<std::unique_ptr<comm::Transfer>> GlooCommunicator::DoPostSend(const void* buf, size_t bytes, int peer,
                                                                       uint32_t tag) {
  std::shared_ptr<::gloo::Context> context;
  {
    std::lock_guard<std::mutex> lock(mu_);
    context = context_;
  }
  // Gloo's send only reads the buffer; its unbound buffer type is not const.
  return GlooTransfer::Post(std::move(context), GlooTransfer::Direction::kSend, const_cast<void*>(buf), bytes, peer,
                            tag, options_.timeout, "communicator '" + prefix_ + "'");
}

StatusOr<std::unique_ptr<comm::Transfer>> GlooCommunicator::DoPostRecv(void* buf, size_t bytes, int peer,
                                                                       uint32_t tag) {
  std::shared_ptr<::gloo::Context> context;
  {
    std::lock_guard<std::mutex> lock(mu_);
    context = context_;
  }
  return GlooTransfer::Post(std::move(context), GlooTransfer::Direction::kRecv, buf, bytes, peer, tag, options_.timeout,
                            "communicator '" + prefix_ + "'");
}

}  // namespace ringmaster::gloo
