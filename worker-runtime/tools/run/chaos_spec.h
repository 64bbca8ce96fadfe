// ringmaster-run's chaos SPEC (--chaos): comma-separated events ACTION@STEP[:ARG], each fired once the
// workers' committed step reaches STEP (see launcher.h for what each action does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::run {

struct ChaosEvent {
  std::string action;  // kill killsave stop pause add killadd; "random": drawn when it fires
  int64_t step = 0;
  int arg = 0;  // the rank (N for add: how many)
};

// "random@S:N" expands to N random events, one every 4 steps from S. Errors: InvalidArgument naming the
// malformed item. Pure function.
StatusOr<std::vector<ChaosEvent>> ParseChaos(const std::string& spec);

}  // namespace ringmaster::run
