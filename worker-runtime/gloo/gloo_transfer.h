// Point-to-point over a Gloo context: one Gloo unbound buffer per send or
// receive, posted at once and completed by Wait() (Gloo's pairs lock
// themselves, so this runs beside the communicator's collectives, as torch's
// ProcessGroupGloo does).
//
// Slots: every transfer uses slot (kPointToPointSlotPrefix, tag), a prefix no
// Gloo collective uses, so a user's tag can never match a collective's buffer.
//
// Errors: a Gloo exception (the peer died, the timeout passed) becomes Aborted.
// Ownership: the transfer keeps the Gloo context alive until it is destroyed.
// Thread-safety: Wait() from one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "worker-runtime/comm/communicator.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace ringmaster::gloo {

inline constexpr uint8_t kPointToPointSlotPrefix = 0x7e;

class GlooTransfer : public comm::Transfer {
 public:
  enum class Direction { kSend, kRecv };
  // Posts the transfer of `bytes` bytes at `buf` with `peer` (a rank of context).
  // `what` names the communicator in errors. Errors: Aborted (Gloo refused it).
  static StatusOr<std::unique_ptr<comm::Transfer>> Post(std::shared_ptr<::gloo::Context> context, Direction direction,
                                                        void* buf, size_t bytes, int peer, uint32_t tag,
                                                        std::chrono::milliseconds timeout, const std::string& what);
  ~GlooTransfer() override;
  Status Wait() override;

 private:
  GlooTransfer(std::shared_ptr<::gloo::Context> context, std::unique_ptr<::gloo::transport::UnboundBuffer> buffer,
               Direction direction, int peer, std::chrono::milliseconds timeout, std::string what);

  const std::shared_ptr<::gloo::Context> context_;  // declared first: outlives buffer_
  std::unique_ptr<::gloo::transport::UnboundBuffer> buffer_;
  const Direction direction_;
  const int peer_;
  const std::chrono::milliseconds timeout_;
  const std::string what_;
  bool waited_ = false;
  Status result_;
};

}  // namespace ringmaster::gloo
