// libFuzzer target: the watch-stream decoder must never crash, hang or grow without bound, and must
// decode the same events whether the stream arrives whole or cut into arbitrary chunks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "kube/watch_decoder.h"

using ringmaster::kube::WatchDecoder;
using ringmaster::kube::WatchEvent;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size; the rest is the stream.
  const size_t chunk = 1 + data[0] % 64;
  std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  WatchDecoder whole(1 << 16);
  std::vector<WatchEvent> whole_events;
  ringmaster::Status whole_status = whole.Feed(stream, &whole_events);
  if (whole_status.ok()) whole_status = whole.Finish(&whole_events);

  WatchDecoder pieces(1 << 16);
  std::vector<WatchEvent> piece_events;
  ringmaster::Status piece_status;
  for (size_t at = 0; at < stream.size() && piece_status.ok(); at += chunk) {
    piece_status = pieces.Feed(stream.substr(at, chunk), &piece_events);
  }
  if (piece_status.ok()) piece_status = pieces.Finish(&piece_events);

  if (whole_status.code() != piece_status.code()) std::abort();
  if (whole_status.ok() && whole_events.size() != piece_events.size()) std::abort();
  if (whole_status.ok()) {
    for (size_t i = 0; i < whole_events.size(); ++i) {
      if (whole_events[i].type != piece_events[i].type || whole_events[i].object != piece_events[i].object)
        std::abort();
    }
  }
  if (!whole_status.ok() && whole_status.message().empty()) std::abort();  // errors name the problem
  return 0;
}
