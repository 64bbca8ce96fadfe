#include "kube/watch.h"

namespace ringmaster::kube {

WatchStream::WatchStream(std::unique_ptr<BodyStream> body) : body_(std::move(body)) {}

void WatchStream::Stop() { body_->Cancel(); }

StatusOr<std::optional<WatchEvent>> WatchStream::Next() {
  std::vector<WatchEvent> decoded;
  while (pending_.empty()) {
    if (ended_) return std::optional<WatchEvent>();
    char buf[16384];
    StatusOr<size_t> n = body_->Read(buf, sizeof buf);
    if (!n.ok()) return n.status();
    decoded.clear();
    if (*n == 0) {
      ended_ = true;
      RINGMASTER_RETURN_IF_ERROR(decoder_.Finish(&decoded));
    } else {
      RINGMASTER_RETURN_IF_ERROR(decoder_.Feed(std::string_view(buf, *n), &decoded));
    }
    for (auto& ev : decoded) pending_.push_back(std::move(ev));
  }
  WatchEvent ev = std::move(pending_.front());
  pending_.pop_front();
  if (ev.type == WatchEventType::kError) return StatusFromWatchError(ev.object);
  return std::optional<WatchEvent>(std::move(ev));
}

}  // namespace ringmaster::kube
