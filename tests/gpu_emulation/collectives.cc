#include "tests/gpu_emulation/collectives.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "tests/gpu_emulation/communicator.h"
#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/log.h"
#include "tests/gpu_emulation/reduce.h"
#include "tests/gpu_emulation/settings.h"
#include "tests/gpu_emulation/streams.h"
#include "tests/gpu_emulation/tags.h"

namespace gpuemu {
namespace {

bool IsCollective(Func f) { return f != Func::kSend && f != Func::kRecv; }

// The tag of the k-th message from `src` to its peer (per ordered pair, as NCCL's p2p matching).
uint64_t P2pTag(int src, uint64_t k) { return MakeTag(TagKind::kP2p, (static_cast<uint64_t>(src) << 40) | k); }

// One communicator's tasks of one group, run as one stream item.
class Batch {
 public:
  Batch(std::shared_ptr<CommCore> comm, std::shared_ptr<Mesh> mesh, std::vector<Task> tasks, uint64_t epoch,
        int other_streams)
      : comm_(std::move(comm)),
        mesh_(std::move(mesh)),
        tasks_(std::move(tasks)),
        epoch_(epoch),
        abort_(comm_->abort_flag),
        waiting_for_(other_streams),
        fault_(InjectedIllegalAddress()) {
    for (const Task& t : tasks_) {
      async_error_ |= t.async_error;
      vanish_ |= t.vanish;
    }
  }

  // On each other stream of the group: its earlier work is done; hold it until the batch ends.
  void Arrive() {
    std::unique_lock<std::mutex> lock(mu_);
    --waiting_for_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_; });
  }

  // On the launch stream.
  void Run() {
    bool ready;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (waiting_for_ > 0 && !abort_.Aborted()) cv_.wait_for(lock, std::chrono::milliseconds(20));
      ready = waiting_for_ == 0;
    }
    const bool ran = ready && comm_->BeginOp(epoch_);
    if (ran) {
      if (vanish_) comm_->vanished.store(true);
      if (fault_) {
        Fault();
      } else if (comm_->vanished.load()) {
        while (!abort_.Aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else {
        Execute();
      }
      if (async_error_ && !abort_.Aborted()) {
        // RINGMASTER_EMULATED_NCCL_ASYNC_ERROR: the data moved, then the proxy's connection failed (as
        // ncclProxyProgress publishes a network error in the communicator's async state)
        Warn(comm_->cuda_dev,
             "NET/Socket : peer connection closed after the operation completed (injected: "
             "RINGMASTER_EMULATED_NCCL_ASYNC_ERROR)");
        SetAsyncError(*comm_, ncclRemoteError);
      }
    }
    comm_->EndOp(ran);
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

 private:
  size_t Bytes(const Task& t) const { return t.count * TypeSize(t.type); }

  // RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS: the kernel faults; CUDA's error is sticky on the device.
  void Fault() {
    Warn(comm_->cuda_dev,
         "Cuda failure 'an illegal memory access was encountered' (injected: "
         "RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS)");
    SetStickyError(comm_->cuda_dev, cudaErrorIllegalAddress);
    SetAsyncError(*comm_, ncclUnhandledCudaError);
  }

  bool Receive(int peer, uint64_t tag, Message* m, size_t expected, const Task& t) {
    if (!mesh_->Recv(peer, tag, m, abort_)) return false;
    if (m->size != expected) {
      Warn(comm_->cuda_dev, "%s : rank %d received %zu bytes from rank %d, expected %zu (mismatched counts)", t.op_name,
           comm_->rank, m->size, peer, expected);
    }
    return true;
  }

  void Execute() {
    bool ok = true;
    for (const Task& t : tasks_) {
      if (t.func == Func::kSend) mesh_->Send(t.root, P2pTag(comm_->rank, t.seq), t.recvbuff, Bytes(t), abort_);
    }
    for (const Task& t : tasks_) {
      if (ok && IsCollective(t.func)) ok = RunCollective(t);
    }
    for (const Task& t : tasks_) {
      if (!ok || t.func != Func::kRecv) continue;
      Message m;
      if (!Receive(t.root, P2pTag(t.root, t.seq), &m, Bytes(t), t)) {
        ok = false;
        break;
      }
      std::memcpy(t.recvbuff, m.data.get(), std::min(m.size, Bytes(t)));
    }
    if (!ok) {
      // aborted: this item's messages still on their way are dropped when they come
      std::vector<uint64_t> tags;
      for (const Task& t : tasks_) {
        if (IsCollective(t.func)) {
          tags.push_back(MakeTag(TagKind::kCollScatter, t.seq));
          tags.push_back(MakeTag(TagKind::kCollGather, t.seq));
        } else if (t.func == Func::kRecv) {
          tags.push_back(P2pTag(t.root, t.seq));
        }
      }
      mesh_->Discard(tags);
    }
  }

  bool RunCollective(const Task& t) {
    switch (t.func) {
      case Func::kAllReduce: return AllReduce(t);
      case Func::kAllGather: return AllGather(t);
      case Func::kBroadcast: return Broadcast(t);
      case Func::kReduce: return Reduce(t);
      case Func::kReduceScatter: return ReduceScatter(t);
      default: return true;
    }
  }

  // Folds the n contributions in rank order into acc: mine from `own`, the others' from the mesh.
  // `progress` (if given): where the partial reduction is written after each step once this rank's own
  // contribution is in (before, it may still be the in-place input), as NCCL's ring kernels write partial
  // sums into the output -- so an abort leaves them there. Nothing is written once the abort flag is up.
  bool FoldInOrder(const Task& t, uint64_t tag, const char* own, size_t count, char* acc, char* progress = nullptr) {
    const int n = mesh_->size(), me = comm_->rank;
    const size_t bytes = count * TypeSize(t.type);
    for (int r = 0; r < n; ++r) {
      Message m;
      const char* in = own;
      if (r != me) {
        if (!Receive(r, tag, &m, bytes, t)) return false;
        if (m.size < bytes) return true;  // mismatched counts (warned): give up on this result
        in = m.data.get();
      }
      Fold(acc, in, count, t.type, t.op, n, r == 0);
      if (progress != nullptr && r >= me && r < n - 1 && !abort_.Aborted()) std::memcpy(progress, acc, bytes);
    }
    if (t.op == ncclAvg) FinishAvg(acc, count, t.type, n);
    return true;
  }

  bool AllReduce(const Task& t) {
    const int n = mesh_->size(), me = comm_->rank;
    const size_t es = TypeSize(t.type), base = t.count / n, rem = t.count % n;
    auto off = [&](int r) { return static_cast<size_t>(r) * base + std::min<size_t>(r, rem); };
    auto len = [&](int r) { return base + (static_cast<size_t>(r) < rem ? 1 : 0); };
    const char* send = static_cast<const char*>(t.sendbuff);
    char* recv = static_cast<char*>(t.recvbuff);
    const uint64_t scatter = MakeTag(TagKind::kCollScatter, t.seq), gather = MakeTag(TagKind::kCollGather, t.seq);
    for (int p = 0; p < n; ++p) {
      if (p != me && len(p) > 0) mesh_->Send(p, scatter, send + off(p) * es, len(p) * es, abort_);
    }
    std::unique_ptr<char[]> acc(new char[len(me) * es + 1]);
    // (aborted half way: the partial reduction stays in this rank's chunk of the output, see collectives.h)
    if (len(me) > 0 && !FoldInOrder(t, scatter, send + off(me) * es, len(me), acc.get(), recv + off(me) * es)) {
      return false;
    }
    for (int p = 0; p < n; ++p) {
      if (p != me && len(me) > 0) mesh_->Send(p, gather, acc.get(), len(me) * es, abort_);
    }
    std::memcpy(recv + off(me) * es, acc.get(), len(me) * es);
    for (int r = 0; r < n; ++r) {
      if (r == me || len(r) == 0) continue;
      Message m;
      if (!Receive(r, gather, &m, len(r) * es, t)) return false;
      std::memcpy(recv + off(r) * es, m.data.get(), std::min(m.size, len(r) * es));
    }
    return true;
  }

  bool AllGather(const Task& t) {
    const int n = mesh_->size(), me = comm_->rank;
    const size_t bytes = Bytes(t);
    const uint64_t tag = MakeTag(TagKind::kCollScatter, t.seq);
    char* recv = static_cast<char*>(t.recvbuff);
    for (int p = 0; p < n; ++p) {
      if (p != me) mesh_->Send(p, tag, t.sendbuff, bytes, abort_);
    }
    if (recv + me * bytes != t.sendbuff) std::memmove(recv + me * bytes, t.sendbuff, bytes);
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      Message m;
      if (!Receive(r, tag, &m, bytes, t)) return false;
      std::memcpy(recv + r * bytes, m.data.get(), std::min(m.size, bytes));
    }
    return true;
  }

  bool Broadcast(const Task& t) {
    const int n = mesh_->size(), me = comm_->rank;
    const size_t bytes = Bytes(t);
    const uint64_t tag = MakeTag(TagKind::kCollScatter, t.seq);
    if (me == t.root) {
      for (int p = 0; p < n; ++p) {
        if (p != me) mesh_->Send(p, tag, t.sendbuff, bytes, abort_);
      }
      if (t.recvbuff != t.sendbuff) std::memmove(t.recvbuff, t.sendbuff, bytes);
      return true;
    }
    Message m;
    if (!Receive(t.root, tag, &m, bytes, t)) return false;
    std::memcpy(t.recvbuff, m.data.get(), std::min(m.size, bytes));
    return true;
  }

  bool Reduce(const Task& t) {
    const int me = comm_->rank;
    const size_t bytes = Bytes(t);
    const uint64_t tag = MakeTag(TagKind::kCollScatter, t.seq);
    if (me != t.root) {
      mesh_->Send(t.root, tag, t.sendbuff, bytes, abort_);
      return true;
    }
    std::unique_ptr<char[]> acc(new char[bytes + 1]);
    if (!FoldInOrder(t, tag, static_cast<const char*>(t.sendbuff), t.count, acc.get())) return false;
    std::memcpy(t.recvbuff, acc.get(), bytes);
    return true;
  }

  bool ReduceScatter(const Task& t) {
    const int n = mesh_->size(), me = comm_->rank;
    const size_t bytes = Bytes(t);  // count is the count of each rank's block
    const uint64_t tag = MakeTag(TagKind::kCollScatter, t.seq);
    const char* send = static_cast<const char*>(t.sendbuff);
    for (int p = 0; p < n; ++p) {
      if (p != me) mesh_->Send(p, tag, send + p * bytes, bytes, abort_);
    }
    std::unique_ptr<char[]> acc(new char[bytes + 1]);
    if (!FoldInOrder(t, tag, send + me * bytes, t.count, acc.get())) return false;
    std::memcpy(t.recvbuff, acc.get(), bytes);
    return true;
  }

  const std::shared_ptr<CommCore> comm_;
  const std::shared_ptr<Mesh> mesh_;
  const std::vector<Task> tasks_;
  const uint64_t epoch_;
  const AbortCheck abort_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_for_;
  bool done_ = false;
  const bool fault_;
  bool async_error_ = false;
  bool vanish_ = false;
};

}  // namespace

ncclResult_t LaunchTasks(const std::shared_ptr<CommCore>& comm, std::vector<Task> tasks) {
  // the streams, in task order; a kernel launch on a stream of another device fails
  std::vector<std::shared_ptr<Stream>> streams;
  for (const Task& t : tasks) {
    std::shared_ptr<Stream> s;
    if (ResolveStream(t.stream, comm->cuda_dev, &s) != cudaSuccess) {
      Warn(comm->cuda_dev, "%s : Cuda failure 'invalid resource handle' (stream %p is not a live stream)", t.op_name,
           static_cast<void*>(t.stream));
      return ncclUnhandledCudaError;
    }
    if (s->device() != comm->cuda_dev) {
      Warn(comm->cuda_dev,
           "%s : Cuda failure 'invalid resource handle': stream %p belongs to CUDA device %d, but the communicator "
           "runs on CUDA device %d (a kernel cannot be launched on another device's stream)",
           t.op_name, static_cast<void*>(t.stream), s->device(), comm->cuda_dev);
      return ncclUnhandledCudaError;
    }
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(std::move(s));
  }
  std::shared_ptr<Mesh> mesh = comm->GetMesh();
  if (!mesh || tasks.empty()) return mesh ? ncclSuccess : ncclInternalError;
  {
    // numbered in launch order: every rank issues the same collectives in the same order, and the
    // k-th send from a to b meets the k-th receive at b from a
    std::lock_guard<std::mutex> lock(comm->mu);
    for (Task& t : tasks) {
      if (IsCollective(t.func)) t.seq = ++comm->coll_seq;
      if (t.func == Func::kSend) t.seq = ++comm->send_seq[t.root];
      if (t.func == Func::kRecv) t.seq = ++comm->recv_seq[t.root];
    }
  }
  const uint64_t epoch = comm->Epoch();
  comm->OpQueued();
  auto batch =
      std::make_shared<Batch>(comm, std::move(mesh), std::move(tasks), epoch, static_cast<int>(streams.size()) - 1);
  for (size_t i = 1; i < streams.size(); ++i) streams[i]->Enqueue([batch] { batch->Arrive(); });
  streams[0]->Enqueue([batch] { batch->Run(); });
  return ncclSuccess;
}

}  // namespace gpuemu
