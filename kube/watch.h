// WatchStream: one streamed watch response, decoded into events as bytes arrive.
//
// Next() blocks for the next event. It returns nullopt when the server ended the stream cleanly
// (timeoutSeconds passed: re-watch from the last resourceVersion), or an error: kUnavailable when the
// connection dropped or timed out on the client side, kDataLoss for an undecodable stream, the
// mapped Status of an ERROR event (410 Expired/Gone → kGone: relist), kCancelled after Stop().
// Thread-safety: Next() from one thread; Stop() from any thread, any time, idempotent.
#pragma once

#include <deque>
#include <memory>
#include <optional>

#include "kube/transport.h"
#include "kube/watch_decoder.h"

namespace ringmaster::kube {

class WatchStream {
 public:
  explicit WatchStream(std::unique_ptr<BodyStream> body);
  StatusOr<std::optional<WatchEvent>> Next();
  void Stop();

 private:
  const std::unique_ptr<BodyStream> body_;  // Cancel() is thread-safe
  // Used only by the thread calling Next().
  WatchDecoder decoder_;
  std::deque<WatchEvent> pending_;
  bool ended_ = false;
};

}  // namespace ringmaster::kube
