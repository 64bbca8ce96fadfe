// ElasticState: what survives a membership change. The program registers how
// to serialize and load its model/optimizer bytes; the state keeps the last
// *committed* copy of those bytes together with the step count and the data
// cursor. Only committed work counts: Restore() rolls the program back to the
// last commit, whatever happened since.
//
//   ElasticState state([&] { return SaveWeights(); }, [&](std::string_view b) { return LoadWeights(b); });
//   ... one training step ...
//   state.Commit(step + 1, next_cursor);   // snapshot: this step is now committed locally
//
// Sync (elastic_sync.h) agrees on the newest committed step across a new world
// and copies that state from a peer that holds it.
//
// Thread-safety: thread-compatible (the driver calls it from one thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "worker-runtime/data/sample_cursor.h"

namespace ringmaster::elastic {

class ElasticState {
 public:
  using SaveFn = std::function<std::string()>;                   // the program's bytes now
  using LoadFn = std::function<Status(std::string_view bytes)>;  // replace the program's bytes

  ElasticState(SaveFn save, LoadFn load) : save_(std::move(save)), load_(std::move(load)) {}

  // Snapshots the program's bytes as the committed state of `step` with `cursor`.
  void Commit(int64_t step, const data::SampleCursor& cursor);
  // Loads the committed bytes back into the program. Errors: those of LoadFn.
  Status Restore();

  int64_t committed_step() const { return step_; }
  const data::SampleCursor& cursor() const { return cursor_; }
  const std::string& committed_bytes() const { return bytes_; }
  bool has_state() const { return has_state_; }

  // Wire/checkpoint form of the committed state: step, cursor and bytes.
  std::string Encode() const;
  // Replaces the committed state with an encoded one (from a peer or a
  // checkpoint) without touching the program; call Restore() after.
  // Errors: DataLoss when `encoded` is not an Encode() output.
  Status Adopt(std::string_view encoded);

 private:
  SaveFn save_;
  LoadFn load_;
  bool has_state_ = false;  // false until the first Commit/Adopt: the program's initial bytes
  int64_t step_ = 0;
  data::SampleCursor cursor_;
  std::string bytes_;
};

}  // namespace ringmaster::elastic
