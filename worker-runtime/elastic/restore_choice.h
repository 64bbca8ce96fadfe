// Which state a new world restores (ElasticDriver's restore, worker-runtime/README.md "Commit agreement").
//
// Every rank brings what it holds (HeldState: its agreed step and, when it computed one more, its tentative
// step, each with the CRC32C of its encoded state) and every rank runs ChooseRestore on the same table, so
// every rank makes the same choice without another message:
//   - the target is the newest step some rank holds *agreed*: every member of the generation that agreed on it
//     confirmed it, so its holders (agreed or still tentative there) hold a trusted copy; a tentative step
//     beyond every agreed one is rolled back;
//   - the holders' checksums must all be equal: a mismatch is never broadcast (a garbage result that got past
//     the agreement, a rank whose memory went bad); the next older agreed step is tried instead, and each
//     mismatch is named in `rejected`;
//   - step 0 is the programs' initial bytes, which may differ per rank (Horovod broadcasts rank 0's): its
//     checksums are not compared.
// The root is the lowest rank holding the chosen step.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::elastic {

// One rank's contribution. Sizes are of the encoded state (ElasticState::Encode).
struct HeldState {
  int64_t agreed_step = 0;
  uint32_t agreed_crc = 0;
  int64_t agreed_size = 0;
  int64_t tentative_step = -1;  // -1: none
  uint32_t tentative_crc = 0;
  int64_t tentative_size = 0;
  int64_t origin = 0;  // where the agreed state came from (the driver's "peer", "checkpoint", "initial")
};

struct RestoreChoice {
  int64_t step = 0;
  int root = 0;
  bool tentative = false;  // the root holds it in its tentative slot
  int64_t size = 0;        // encoded bytes
  uint32_t crc = 0;
  int64_t origin = 0;                 // the root's HeldState::origin
  std::vector<std::string> rejected;  // the newer steps whose holders disagreed, one line each
};

// Errors: DataLoss when no agreed step has holders that agree (the message names each step's checksums: the
// job must restart from its newest checkpoint); InvalidArgument for an empty table.
StatusOr<RestoreChoice> ChooseRestore(const std::vector<HeldState>& ranks);

}  // namespace ringmaster::elastic
