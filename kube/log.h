// Logging seam: libraries take a LogFn instead of writing to a process-wide logger.
#pragma once

#include <functional>
#include <string_view>

namespace ringmaster::kube {

enum class LogLevel { kInfo, kWarning, kError };
// Must be thread-safe.
using LogFn = std::function<void(LogLevel, std::string_view message)>;
// Writes "W ringmaster-kube: <message>" lines to stderr (one write per line).
LogFn StderrLog();

}  // namespace ringmaster::kube
