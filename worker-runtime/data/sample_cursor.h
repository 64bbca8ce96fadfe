// SampleCursor: where a job stands in its data, as part of the committed state.
//
// (epoch, committed) means: epochs before `epoch` are done, and the first
// `committed` samples of `epoch`'s permutation have been trained on by a step
// that was committed globally. Everything after that position is not yet
// consumed, whatever happened to uncommitted steps. The cursor knows nothing
// about the world size, so it survives any membership change unchanged.
//
// Thread-safety: a value type; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::data {

struct SampleCursor {
  uint64_t epoch = 0;
  uint64_t committed = 0;  // samples of `epoch` already committed globally

  bool operator==(const SampleCursor&) const = default;
};

// "epoch=3 committed=1024" for logs.
std::string CursorToString(const SampleCursor& cursor);

// Serialized form for a checkpoint blob: a small JSON object
// {"version":1,"epoch":E,"committed":C}.
std::string EncodeCursor(const SampleCursor& cursor);

// Parses EncodeCursor's output. Errors: DataLoss when the bytes are not a
// version-1 cursor (garbage, truncated, wrong types, negative numbers).
StatusOr<SampleCursor> DecodeCursor(std::string_view bytes);

}  // namespace ringmaster::data
