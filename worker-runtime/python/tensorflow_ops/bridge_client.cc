#include "worker-runtime/python/tensorflow_ops/bridge_client.h"

namespace ringmaster::tensorflow_ops {
namespace {

// See Bridge(): set by ringmaster_tf_attach, read by every kernel.
std::atomic<const RingmasterTfBridge*> attached{nullptr};

// base::StatusCode's numbers are absl's canonical codes up to kUnauthenticated (16); ours beyond that
// (Conflict, Gone) never reach a collective, and map to Unknown if they ever do.
absl::StatusCode ToAbsl(int code) {
  return code >= 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown;
}

}  // namespace

absl::StatusOr<const RingmasterTfBridge*> Bridge() {
  const RingmasterTfBridge* b = attached.load(std::memory_order_acquire);
  if (b == nullptr) {
    return absl::FailedPreconditionError(
        "ringmaster is not initialized in this process: call ringmaster.tensorflow.init() (hvd.init()) before "
        "running a ringmaster collective");
  }
  return b;
}

absl::Status SetInfo(const RingmasterTfBridge& bridge, int process_set, int* size, int* rank) {
  char err[512] = {0};
  const int code = bridge.set_info(bridge.session, process_set, size, rank, err, sizeof err);
  if (code == 0) return absl::OkStatus();
  return absl::Status(ToAbsl(code), std::string("ringmaster process set ") + std::to_string(process_set) + ": " + err);
}

void KernelCompletion::OnPart(void* self, int code, const char* message) {
  auto* c = static_cast<KernelCompletion*>(self);
  if (code != 0) {
    // The prefix is how ringmaster.tensorflow tells a failed collective (HorovodInternalError) from other
    // TensorFlow errors.
    c->FailPart(absl::Status(ToAbsl(code), "ringmaster collective '" + c->name_ + "': " + (message ? message : "")));
    return;
  }
  c->CountDown();
}

void KernelCompletion::FailPart(const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.ok()) first_error_ = why;
  }
  CountDown();
}

void KernelCompletion::Release() { CountDown(); }

void KernelCompletion::CountDown() {
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!first_error_.ok()) ctx_->SetStatus(first_error_);
  auto done = std::move(done_);
  delete this;
  done();
}

}  // namespace ringmaster::tensorflow_ops

extern "C" int ringmaster_tf_attach(const RingmasterTfBridge* bridge) {
  if (bridge != nullptr && bridge->abi != RINGMASTER_TF_BRIDGE_ABI) return 1;
  ringmaster::tensorflow_ops::attached.store(bridge, std::memory_order_release);
  return 0;
}
