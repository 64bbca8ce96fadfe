#include "tests/gpu_emulation/streams.h"

#include <unordered_map>
#include <vector>

#include "tests/gpu_emulation/device_memory.h"

// The handle types are incomplete in driver_types.h; the emulation's handles are tags whose
// addresses key the tables below.
struct CUstream_st {
  char tag;
};
struct CUevent_st {
  char tag;
};

namespace gpuemu {

void Completion::Set() {
  std::lock_guard<std::mutex> lock(mu_);
  set_ = true;
  cv_.notify_all();
}

bool Completion::IsSet() {
  std::lock_guard<std::mutex> lock(mu_);
  return set_;
}

void Completion::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return set_; });
}

Stream::Stream(int device, unsigned flags) : device_(device), flags_(flags), worker_([this] { Run(); }) {}

Stream::~Stream() {
  Retire();
  if (!worker_.joinable()) return;
  // Work never holds its own stream (see streams.h), so this is not the worker; be safe anyway.
  if (worker_.get_id() == std::this_thread::get_id()) {
    worker_.detach();
  } else {
    worker_.join();
  }
}

void Stream::Enqueue(std::function<void()> work) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(work));
  ++enqueued_;
  wake_.notify_one();
}

bool Stream::Idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ == enqueued_;
}

void Stream::Synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = enqueued_;
  progress_.wait(lock, [&] { return completed_ >= target; });
}

std::shared_ptr<Completion> Stream::Mark() {
  auto point = std::make_shared<Completion>();
  Enqueue([point] { point->Set(); });
  return point;
}

void Stream::Retire() {
  std::lock_guard<std::mutex> lock(mu_);
  retiring_ = true;
  wake_.notify_one();
}

bool Stream::Ended() {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

void Stream::Run() {
  // as a CUDA stream: one item at a time, in order, on this stream's device
  SetCurrentDevice(device_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return !queue_.empty() || retiring_; });
    if (queue_.empty()) break;  // retiring, and drained
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    work = nullptr;  // release what it held before counting it done
    lock.lock();
    ++completed_;
    progress_.notify_all();
  }
  ended_ = true;
  progress_.notify_all();
}

namespace {

struct Tables {
  std::mutex mu;
  std::unordered_map<const CUstream_st*, std::shared_ptr<Stream>> streams;
  std::unordered_map<const CUevent_st*, EventState> events;
  std::vector<std::shared_ptr<Stream>> legacy;   // per device, made at first use
  std::vector<std::shared_ptr<Stream>> retired;  // destroyed, worker maybe still running
};

Tables& Get() {
  static Tables* tables = new Tables;  // never freed: see streams.h
  return *tables;
}

// Joins the workers of retired streams that have ended (under the tables' lock).
void ReapRetired(Tables& t) {
  for (size_t i = 0; i < t.retired.size();) {
    if (t.retired[i]->Ended()) {
      t.retired[i] = std::move(t.retired.back());
      t.retired.pop_back();  // ~Stream joins the (ended) worker
    } else {
      ++i;
    }
  }
}

}  // namespace

cudaError_t ResolveStream(cudaStream_t handle, int null_device, std::shared_ptr<Stream>* out) {
  Tables& t = Get();
  std::lock_guard<std::mutex> lock(t.mu);
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread) {
    if (null_device < 0 || null_device >= DeviceCount()) return cudaErrorInvalidDevice;
    if (t.legacy.size() < static_cast<size_t>(DeviceCount())) t.legacy.resize(DeviceCount());
    if (!t.legacy[null_device]) t.legacy[null_device] = std::make_shared<Stream>(null_device, 0);
    *out = t.legacy[null_device];
    return cudaSuccess;
  }
  auto it = t.streams.find(handle);
  if (it == t.streams.end()) return cudaErrorInvalidResourceHandle;
  *out = it->second;
  return cudaSuccess;
}

cudaError_t CreateStream(int device, unsigned flags, cudaStream_t* out) {
  Tables& t = Get();
  auto* handle = new CUstream_st{};
  auto stream = std::make_shared<Stream>(device, flags);
  std::lock_guard<std::mutex> lock(t.mu);
  ReapRetired(t);
  t.streams[handle] = std::move(stream);
  *out = handle;
  return cudaSuccess;
}

cudaError_t DestroyStream(cudaStream_t handle) {
  Tables& t = Get();
  std::shared_ptr<Stream> idle;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.streams.find(handle);
    if (it == t.streams.end()) return cudaErrorInvalidResourceHandle;
    it->second->Retire();
    if (it->second->Idle()) {
      idle = std::move(it->second);  // its worker ends at once: joined below
    } else {
      t.retired.push_back(std::move(it->second));  // still busy (maybe hung): joined once it ends
    }
    t.streams.erase(it);
    delete handle;
    ReapRetired(t);
  }
  idle.reset();  // ~Stream joins the worker (outside the tables' lock)
  return cudaSuccess;
}

void StreamsOfDevice(int device, std::vector<std::shared_ptr<Stream>>* out) {
  Tables& t = Get();
  std::lock_guard<std::mutex> lock(t.mu);
  for (auto& [handle, stream] : t.streams) {
    if (stream->device() == device) out->push_back(stream);
  }
  if (device >= 0 && static_cast<size_t>(device) < t.legacy.size() && t.legacy[device]) {
    out->push_back(t.legacy[device]);
  }
}

cudaError_t CreateEvent(int device, unsigned flags, cudaEvent_t* out) {
  Tables& t = Get();
  auto* handle = new CUevent_st{};
  std::lock_guard<std::mutex> lock(t.mu);
  t.events[handle] = EventState{device, flags, nullptr};
  *out = handle;
  return cudaSuccess;
}

cudaError_t DestroyEvent(cudaEvent_t handle) {
  Tables& t = Get();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.events.find(handle);
  if (it == t.events.end()) return cudaErrorInvalidResourceHandle;
  t.events.erase(it);  // a record still queued keeps its Completion
  delete handle;
  return cudaSuccess;
}

cudaError_t WithEvent(cudaEvent_t handle, const std::function<void(EventState&)>& fn) {
  Tables& t = Get();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.events.find(handle);
  if (it == t.events.end()) return cudaErrorInvalidResourceHandle;
  fn(it->second);
  return cudaSuccess;
}

}  // namespace gpuemu
