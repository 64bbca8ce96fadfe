// A collective submitted to the runtime, and the handle its caller waits on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/common/dtype.h"

namespace ringmaster::fusion {

enum class CollectiveKind : uint8_t {
  kAllreduce,
  kAllgather,
  kAllgatherv,
  kBroadcast,
  kReduceScatter,
  kAlltoall,
  kBarrier
};
std::string_view CollectiveKindName(CollectiveKind kind);

// Completion state shared by the runtime (writer) and the caller (reader).
// Thread-safety: all methods are safe from any thread.
class Completion {
 public:
  void Finish(Status status);
  bool done() const;
  // Waits for completion. Errors: the collective's status; DeadlineExceeded
  // when it did not finish within timeout (it keeps running). A wait that
  // finds it unfinished first marks it awaited and runs the OnFirstWait hook.
  Status Wait(std::chrono::milliseconds timeout) const;
  // Whether a caller has waited for it before it finished.
  bool awaited() const { return awaited_.load(std::memory_order_acquire); }
  // `wake` runs once, on the thread of the first Wait that finds the collective unfinished (after awaited()
  // turns true): the engine that queued it (engine.h) runs it now instead of waiting for more requests to
  // fuse. Set by that engine before the request is queued; must be quick and must not wait.
  void OnFirstWait(std::function<void()> wake);
  // Calls `fn(status)` once, when the collective finishes: at once on the calling thread when it already
  // has, else on the thread that finishes it (the process set's engine thread, so `fn` must be quick and
  // must not wait for another collective). For callers that cannot block a thread on Wait: TensorFlow's
  // asynchronous kernels.
  void OnDone(std::function<void(const Status&)> fn);

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  // Guarded by mu_.
  bool done_ = false;
  Status status_;
  std::vector<std::function<void(const Status&)>> on_done_;
  mutable std::function<void()> on_first_wait_;  // taken by the first Wait that finds done_ false
  mutable std::atomic<bool> awaited_{false};     // written under mu_, read without it
};

// The caller's view of an asynchronous collective. Copyable; cheap.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<Completion> c) : completion_(std::move(c)) {}
  // True once the collective finished (successfully or not). Never blocks.
  bool Poll() const { return completion_ == nullptr || completion_->done(); }
  // Blocks until done; returns the collective's status.
  Status Wait(std::chrono::milliseconds timeout = std::chrono::hours(24)) const {
    return completion_ ? completion_->Wait(timeout) : FailedPreconditionError("empty handle");
  }
  // Calls `fn(status)` once the collective finished (Completion::OnDone); an empty handle calls it at once.
  void OnDone(std::function<void(const Status&)> fn) const {
    if (completion_) {
      completion_->OnDone(std::move(fn));
    } else {
      fn(FailedPreconditionError("empty handle"));
    }
  }

 private:
  std::shared_ptr<Completion> completion_;
};

// One submitted collective. Buffers are borrowed from the caller until the
// handle completes.
struct Request {
  std::string name;
  CollectiveKind kind = CollectiveKind::kAllreduce;
  common::DataType type = common::DataType::kFloat32;
  common::ReduceOp op = common::ReduceOp::kSum;
  size_t count = 0;
  int root = 0;
  std::vector<size_t> counts;  // allgatherv: elements per rank of the process set
  const void* in = nullptr;
  void* out = nullptr;
  // The buffers are host memory while the set's data communicator moves GPU memory (NCCL): the engine
  // runs it on the set's host communicator, ordered with the GPU collectives (Horovod's CPU ops on Gloo
  // beside NCCL). Part of the fingerprint: every rank must pass the same kind of memory.
  bool host = false;
  // Where the input is produced by device work the caller queued on a stream of its own (torch's current CUDA
  // stream): the collective runs after it (Communicator::OrderAfter: on the device under NCCL), and the caller
  // never waits for its own kernels. Null: the input is ready when submitted. Not part of the fingerprint.
  std::shared_ptr<comm::ReadyFence> ready;
  std::chrono::steady_clock::time_point submitted;
  std::shared_ptr<Completion> completion = std::make_shared<Completion>();

  size_t bytes() const { return count * common::DataTypeSize(type); }
  // What every rank must agree on: name, kind, type, op, count, root, counts (not buffers).
  uint64_t Fingerprint() const;
  std::string Describe() const;  // "'grad.3' (allreduce float32 x1024 sum)"
};

}  // namespace ringmaster::fusion
