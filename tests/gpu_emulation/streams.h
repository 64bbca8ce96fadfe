// Emulated CUDA streams and events.
//
// A stream is an ordered host queue with its own worker thread: work enqueued on it (a memcpy, a
// memset, an NCCL kernel, an event's record) runs in order, one item at a time, on the device it
// was created for. The null stream (and cudaStreamLegacy, cudaStreamPerThread) is the device's
// legacy default stream, one per device, made at first use. A Completion is one point of a queue
// (what an event's record marks).
//
// Ownership: streams are shared_ptrs; work enqueued on a stream must never own a Stream (its
// destructor joins the worker). cudaStreamDestroy retires
// a stream: it returns at once and the worker ends after the queued work (as CUDA releases a
// stream's resources once its work is done); ended workers are joined at the next stream call.
// The tables are never freed, so workers still running at process exit touch live memory only.
// Thread-safety: everything here is safe from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/gpu_emulation/api_headers.h"

namespace gpuemu {

class Completion {
 public:
  void Set();
  bool IsSet();
  void Wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

class Stream {
 public:
  Stream(int device, unsigned flags);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  unsigned flags() const { return flags_; }

  // Runs `work` on the worker after everything enqueued before it.
  void Enqueue(std::function<void()> work);
  // Nothing queued and nothing running (cudaStreamQuery).
  bool Idle();
  // Waits for everything enqueued before the call (cudaStreamSynchronize).
  void Synchronize();
  // A point that completes once everything enqueued so far has run (cudaEventRecord).
  std::shared_ptr<Completion> Mark();
  // No more work: the worker ends once its queue is empty.
  void Retire();
  bool Ended();

 private:
  void Run();

  const int device_;
  const unsigned flags_;
  std::mutex mu_;
  std::condition_variable wake_;      // the worker: work or retirement
  std::condition_variable progress_;  // waiters: an item finished
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool retiring_ = false;
  bool ended_ = false;
  std::thread worker_;  // last: starts after the members above exist
};

// The stream a handle names: null, cudaStreamLegacy and cudaStreamPerThread are the legacy default
// stream of `null_device`. cudaErrorInvalidResourceHandle for a handle that is not a live stream.
cudaError_t ResolveStream(cudaStream_t handle, int null_device, std::shared_ptr<Stream>* out);

// cudaStreamCreateWithFlags / cudaStreamDestroy.
cudaError_t CreateStream(int device, unsigned flags, cudaStream_t* out);
cudaError_t DestroyStream(cudaStream_t handle);

// Every live stream of a device, legacy included (cudaDeviceSynchronize).
void StreamsOfDevice(int device, std::vector<std::shared_ptr<Stream>>* out);

// Events: the device they were created on and the point of their last record.
struct EventState {
  int device = 0;
  unsigned flags = 0;
  std::shared_ptr<Completion> last;  // null until recorded
};
cudaError_t CreateEvent(int device, unsigned flags, cudaEvent_t* out);
cudaError_t DestroyEvent(cudaEvent_t handle);
// Runs fn on the event's state under the events table's lock; InvalidResourceHandle if not live.
cudaError_t WithEvent(cudaEvent_t handle, const std::function<void(EventState&)>& fn);

}  // namespace gpuemu
