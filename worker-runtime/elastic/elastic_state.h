// ElasticState: what survives a membership change. The program registers how to serialize and load its
// model/optimizer bytes; the state keeps snapshots of those bytes together with the step count and the data
// cursor, in two slots:
//
//   - the *agreed* state: the newest step every member of its generation confirmed (its collectives completed
//     without an error on every rank: worker-runtime/README.md, "Commit agreement"). Only it is checkpointed,
//     restored from and broadcast to a new world;
//   - the *tentative* state: the step this worker computed after it, committed locally but not yet confirmed
//     by every member. A collective's OK on one rank proves nothing about its result once a peer failed
//     (NCCL: an aborted kernel leaves its stream idle with partial results), so a tentative step is thrown
//     away by Restore() unless Agree() promoted it first.
//
//   ElasticState state([&] { return SaveWeights(); }, [&](std::string_view b) { return LoadWeights(b); });
//   ... one training step ...
//   state.Commit(step + 1, next_cursor);   // snapshot: tentative
//   ... every member confirmed step + 1 ...
//   state.Agree(step + 1);                 // now the agreed state
//
// The driver (elastic_driver.h) agrees on a step while the next one runs, so at most these two snapshots
// exist: memory for two copies of the program's bytes.
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

  // Snapshots the program's bytes as the tentative state of `step` with `cursor`, replacing any earlier
  // tentative one. The first snapshot of a state that has none (the program's initial bytes as step 0, or a
  // program with no peers to agree with) and any snapshot of step 0 are agreed at once.
  void Commit(int64_t step, const data::SampleCursor& cursor);
  // Every member confirmed the steps up to `step`: the tentative state becomes the agreed one when its step is
  // at most `step`. Otherwise a no-op.
  void Agree(int64_t step);
  // Loads the agreed state back into the program and drops the tentative one (the rollback of a step nobody
  // agreed on). Errors: those of LoadFn.
  Status Restore();

  // The newest snapshot, agreed or tentative: the steps this worker has computed.
  int64_t committed_step() const { return tentative() ? tentative_.step : agreed_.step; }
  const data::SampleCursor& cursor() const { return tentative() ? tentative_.cursor : agreed_.cursor; }
  const std::string& committed_bytes() const { return tentative() ? tentative_.bytes : agreed_.bytes; }
  bool has_state() const { return agreed_.valid; }
  // The agreed slot's step (0 before the first Commit/Adopt), and whether a tentative step follows it.
  int64_t agreed_step() const { return agreed_.step; }
  bool tentative() const { return tentative_.valid; }
  int64_t tentative_step() const { return tentative_.step; }

  // Wire/checkpoint form of the agreed state: step, cursor and bytes.
  std::string Encode() const { return EncodeSlot(agreed_); }
  // The same form of the tentative state (the agreed one when there is none).
  std::string EncodeTentative() const { return EncodeSlot(tentative() ? tentative_ : agreed_); }
  // The length of EncodeTentative() (tentative) or Encode() (not).
  size_t EncodedSize(bool tentative) const;
  // CRC32C of Encode() / EncodeTentative(): what a new world compares across the holders of one step.
  uint32_t AgreedChecksum() const { return Checksum(agreed_); }
  uint32_t TentativeChecksum() const { return Checksum(tentative() ? tentative_ : agreed_); }
  // Replaces the state with an encoded one (from a peer or a checkpoint) as the agreed state, dropping any
  // tentative one, without touching the program; call Restore() after.
  // Errors: DataLoss when `encoded` is not an Encode() output.
  Status Adopt(std::string_view encoded);

 private:
  struct Slot {
    bool valid = false;
    int64_t step = 0;
    data::SampleCursor cursor;
    std::string bytes;
  };
  static std::string EncodeSlot(const Slot& slot);
  static uint32_t Checksum(const Slot& slot);

  SaveFn save_;
  LoadFn load_;
  Slot agreed_;     // invalid until the first Commit/Adopt: the program's initial bytes
  Slot tentative_;  // valid between a Commit and its Agree (or the Restore that drops it)
};

}  // namespace ringmaster::elastic
