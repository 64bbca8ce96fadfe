#include "worker-runtime/tools/run/chaos_spec.h"

#include <charconv>
#include <sstream>

namespace ringmaster::run {
namespace {

bool KnownAction(const std::string& a) {
  return a == "kill" || a == "stop" || a == "add" || a == "killadd" || a == "pause" || a == "random" ||
         a == "killsave" || a == "killcoll" || a == "killcolls";
}

constexpr int kMaxRepeats = 100000;  // events one random@ or killcolls@ item may expand to

// A whole number filling all of `text`.
template <typename T>
bool ParseWhole(const std::string& text, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

StatusOr<std::vector<ChaosEvent>> ParseChaos(const std::string& spec) {
  std::vector<ChaosEvent> events;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    ChaosEvent e;
    auto at = item.find('@');
    if (at == std::string::npos) return InvalidArgumentError("--chaos: '" + item + "' is not ACTION@STEP[:ARG]");
    e.action = item.substr(0, at);
    if (!KnownAction(e.action)) {
      return InvalidArgumentError("--chaos: unknown action '" + e.action +
                                  "' (kill, killsave, killcoll, killcolls, stop, pause, add, killadd, random)");
    }
    std::string rest = item.substr(at + 1);
    auto colon = rest.find(':');
    e.arg = e.action == "add" ? 1 : 0;
    if (!ParseWhole(rest.substr(0, colon), &e.step) ||
        (colon != std::string::npos && !ParseWhole(rest.substr(colon + 1), &e.arg))) {
      return InvalidArgumentError("--chaos: '" + item + "' has a bad number");
    }
    if (e.action == "random" || e.action == "killcolls") {
      const int n = colon == std::string::npos ? 1 : e.arg;
      if (n > kMaxRepeats) {
        return InvalidArgumentError("--chaos: '" + item + "' asks for more than " + std::to_string(kMaxRepeats) +
                                    " events");
      }
      const bool random = e.action == "random";
      const int64_t every = random ? kRandomEverySteps : kKillCollsEverySteps;
      for (int k = 0; k < n; ++k) events.push_back({random ? "random" : "killcoll", e.step + every * k, 0, !random});
      continue;
    }
    events.push_back(e);
  }
  return events;
}

}  // namespace ringmaster::run
