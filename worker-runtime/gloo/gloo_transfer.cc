#include "worker-runtime/gloo/gloo_transfer.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <exception>

namespace ringmaster::gloo {

StatusOr<std::unique_ptr<comm::Transfer>> GlooTransfer::Post(std::shared_ptr<::gloo::Context> context,
                                                             Direction direction, void* buf, size_t bytes, int peer,
                                                             uint32_t tag, std::chrono::milliseconds timeout,
                                                             const std::string& what) {
  const char* verb = direction == Direction::kSend ? "send to" : "recv from";
  if (!context) return AbortedError(what + ": " + verb + " rank " + std::to_string(peer) + ": the context is closed");
  try {
    auto buffer = context->createUnboundBuffer(buf, bytes);
    const uint64_t slot = ::gloo::Slot::build(kPointToPointSlotPrefix, tag);
    if (direction == Direction::kSend) {
      buffer->send(peer, slot);
    } else {
      buffer->recv(peer, slot);
    }
    return std::unique_ptr<comm::Transfer>(
        new GlooTransfer(std::move(context), std::move(buffer), direction, peer, timeout, what));
  } catch (const std::exception& e) {
    return AbortedError(what + ": " + verb + " rank " + std::to_string(peer) + " failed: " + e.what());
  }
}

GlooTransfer::GlooTransfer(std::shared_ptr<::gloo::Context> context,
                           std::unique_ptr<::gloo::transport::UnboundBuffer> buffer, Direction direction, int peer,
                           std::chrono::milliseconds timeout, std::string what)
    : context_(std::move(context)),
      buffer_(std::move(buffer)),
      direction_(direction),
      peer_(peer),
      timeout_(timeout),
      what_(std::move(what)) {}

GlooTransfer::~GlooTransfer() {
  try {
    buffer_.reset();
  } catch (...) {}
}

Status GlooTransfer::Wait() {
  if (waited_) return result_;
  waited_ = true;
  const char* verb = direction_ == Direction::kSend ? "send to" : "recv from";
  std::string error;
  try {
    const bool done = direction_ == Direction::kSend ? buffer_->waitSend(timeout_) : buffer_->waitRecv(timeout_);
    if (done) return result_ = Status::Ok();
    error = "aborted";
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  result_ = AbortedError(what_ + ": " + verb + " rank " + std::to_string(peer_) + " failed: " + error);
  return result_;
}

}  // namespace ringmaster::gloo
