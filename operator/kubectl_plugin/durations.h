// Durations as people read them, for kubectl-ringmaster's output and its --timeout flag.
//
// Errors: ParseDuration returns InvalidArgument naming the text and the accepted forms.
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"

namespace ringmaster::kubectl_plugin {

// Whole units, the largest two, the second zero-padded: "0s", "45s", "1m05s", "59m59s", "1h00m", "23h59m",
// "1d00h", "12d03h". Truncated, never rounded up; a negative duration is "0s".
std::string HumanDuration(std::chrono::milliseconds d);

// A measured figure in seconds with one decimal: "0.0s", "2.4s", "65.0s"; negative values print as they are.
std::string FormatSeconds(double seconds);

// Go-style durations as kubectl's flags take them: "300" (seconds), "90s", "5m", "1h", "1m30s", "1h2m3s".
// InvalidArgument for anything else, and for zero.
StatusOr<std::chrono::seconds> ParseDuration(const std::string& text);

}  // namespace ringmaster::kubectl_plugin
