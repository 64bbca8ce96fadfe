// RFC 3339 timestamps as Kubernetes writes them ("2026-11-21T18:54:18Z").
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace ringmaster::controller {

// UTC, whole seconds. Thread-safe.
std::string FormatRfc3339(std::chrono::system_clock::time_point t);
// Parses "YYYY-MM-DDTHH:MM:SS[.frac]Z"; nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s);

}  // namespace ringmaster::controller
