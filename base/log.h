// The one logging seam. Libraries take a LogSink from their owner instead of writing to a process-wide
// logger; the binary decides where lines go (text or JSON on stderr, a test's capture).
//
// Thread-safety: a sink may be called from any thread at once, so every sink must be thread-safe.
// Ownership: a sink is a value; copies share whatever the callable captured.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ringmaster {

enum class LogLevel { kInfo, kWarning, kError };

// One line per call, without the trailing newline. May be empty: call it through Log().
using LogSink = std::function<void(LogLevel, std::string_view message)>;

// "I|W|E <component>: <message>\n" on stderr, one write(2) per line.
LogSink StderrLogSink(std::string component);

// Calls `sink` when it is set.
inline void Log(const LogSink& sink, LogLevel level, std::string_view message) {
  if (sink) sink(level, message);
}

}  // namespace ringmaster
