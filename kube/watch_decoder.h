// Decoding of a watch response body: newline-delimited JSON objects {"type": ..., "object": {...}}.
// Pure (no I/O), so it can be fuzzed. Chunks may split lines anywhere.
//
// Errors (kDataLoss, naming the problem): a line that is not valid JSON, not an object, lacks a known
// "type" or an object-valued "object"; a line longer than the limit; on Finish(), a partial last line
// (a truncated chunk). After an error the decoder stays failed and returns the same error.
// Thread-safety: a WatchDecoder is used by one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object; for kError a metav1.Status
};

// Parses one line (without its newline).
StatusOr<WatchEvent> ParseWatchEvent(std::string_view line);

// The Status an ERROR event carries (e.g. 410 Expired → kGone), with the HTTP code and reason.
Status StatusFromWatchError(const nlohmann::json& status_object);

class WatchDecoder {
 public:
  explicit WatchDecoder(size_t max_line_bytes = 64u << 20);
  // Appends `chunk`, decodes every complete line into `out` (appending). Blank lines are skipped.
  Status Feed(std::string_view chunk, std::vector<WatchEvent>* out);
  // The stream ended. A buffered last line without its newline is decoded into `out` when it is a
  // whole event; otherwise kDataLoss (truncated chunk).
  Status Finish(std::vector<WatchEvent>* out);

 private:
  const size_t max_line_bytes_;
  std::string partial_;
  Status failed_;
};

}  // namespace ringmaster::kube
