// The op library's side of the bridge to the worker session (native/tf_bridge.h): the bridge it was handed,
// and the completion of one kernel's collectives reported back to TensorFlow.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "tensorflow/core/framework/op_kernel.h"
#include "worker-runtime/python/native/tf_bridge.h"

// Called by ringmaster.tensorflow through ctypes: binds the kernels to a session's bridge (NULL detaches).
// Returns 0, or 1 when the bridge is of another ABI version (a stale build). Thread-safe.
extern "C" __attribute__((visibility("default"))) int ringmaster_tf_attach(const RingmasterTfBridge* bridge);

namespace ringmaster::tensorflow_ops {

// The attached bridge, or an error telling the user to call init(). The library's one process-wide binding:
// the op registry it belongs to is process-wide too, and the bridge outlives every kernel call (shutdown
// detaches before the session goes).
absl::StatusOr<const RingmasterTfBridge*> Bridge();

// The set's size and this worker's rank in it, now.
absl::Status SetInfo(const RingmasterTfBridge& bridge, int process_set, int* size, int* rank);

// The completion of one kernel run that submits `parts` collectives: TensorFlow's done callback runs once,
// after the last part finished, with the first failure (if any) set on the context. Self-deleting.
// Usage: new KernelCompletion(ctx, done, name, n); submit n requests with (&KernelCompletion::OnPart, it);
// then it->Release() once all are submitted (so a part finishing at once cannot complete the kernel early).
class KernelCompletion {
 public:
  KernelCompletion(::tensorflow::OpKernelContext* ctx, ::tensorflow::AsyncOpKernel::DoneCallback done, std::string name,
                   int parts)
      : ctx_(ctx), done_(std::move(done)), name_(std::move(name)), remaining_(parts + 1) {}
  // RingmasterTfDone for each part: records a failure and counts the part down.
  static void OnPart(void* self, int code, const char* message);
  // Fails a part that was never submitted (and counts it down).
  void FailPart(const absl::Status& why);
  // The submitter's own count: call once after submitting every part.
  void Release();

 private:
  void CountDown();

  ::tensorflow::OpKernelContext* ctx_;
  ::tensorflow::AsyncOpKernel::DoneCallback done_;
  std::string name_;
  std::atomic<int> remaining_;
  std::mutex mu_;
  absl::Status first_error_;  // guarded by mu_
};

}  // namespace ringmaster::tensorflow_ops
