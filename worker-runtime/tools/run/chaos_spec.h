// ringmaster-run's chaos SPEC (--chaos): comma-separated events ACTION@STEP[:ARG], each fired once the
// workers' committed step reaches STEP (see launcher.h for what each action does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::run {

struct ChaosEvent {
  std::string action;  // kill killsave killcoll stop pause add killadd; "random": drawn when it fires
  int64_t step = 0;
  int arg = 0;            // the rank (N for add: how many)
  bool any_rank = false;  // the rank is drawn from --chaos-seed when the event fires (killcolls)
};

// Every how many steps the events of "random@S:N" and "killcolls@S:N" follow each other.
inline constexpr int64_t kRandomEverySteps = 4, kKillCollsEverySteps = 2;

// "random@S:N" expands to N random events, one every kRandomEverySteps steps from S; "killcolls@S:N" to N
// killcoll events of a rank drawn when each fires, one every kKillCollsEverySteps steps from S. Errors:
// InvalidArgument naming the malformed item. Pure function.
StatusOr<std::vector<ChaosEvent>> ParseChaos(const std::string& spec);

}  // namespace ringmaster::run
