#include "worker-runtime/elastic/restore_choice.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

namespace ringmaster::elastic {

namespace {

std::string Hex(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

}  // namespace

StatusOr<RestoreChoice> ChooseRestore(const std::vector<HeldState>& ranks) {
  if (ranks.empty()) return InvalidArgumentError("restore: no ranks");
  std::set<int64_t, std::greater<>> targets;
  for (const HeldState& h : ranks) targets.insert(h.agreed_step);
  std::vector<std::string> rejected;
  for (int64_t step : targets) {
    RestoreChoice choice;
    choice.step = step;
    choice.root = -1;
    bool agree = true;
    std::string held;  // "rank r: crc" of every holder, for a mismatch's line
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
      const HeldState& h = ranks[r];
      const bool in_agreed = h.agreed_step == step, in_tentative = h.tentative_step == step;
      if (!in_agreed && !in_tentative) continue;
      const uint32_t crc = in_agreed ? h.agreed_crc : h.tentative_crc;
      held +=
          (held.empty() ? "rank " : ", rank ") + std::to_string(r) + (in_agreed ? "" : " (tentative)") + " " + Hex(crc);
      if (choice.root < 0) {
        choice.root = r;
        choice.tentative = !in_agreed;
        choice.size = in_agreed ? h.agreed_size : h.tentative_size;
        choice.crc = crc;
        choice.origin = h.origin;
      } else if (step != 0 && crc != choice.crc) {
        agree = false;
      }
    }
    if (agree) {
      choice.rejected = std::move(rejected);
      return choice;
    }
    rejected.push_back("step " + std::to_string(step) + ": the holders' checksums differ (" + held + ")");
  }
  std::string why;
  for (const auto& line : rejected) why += (why.empty() ? "" : "; ") + line;
  return DataLossError("no step the members agreed on has holders with equal states (" + why +
                       "): not restoring any of them; restart the job from its newest checkpoint");
}

}  // namespace ringmaster::elastic
