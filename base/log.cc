#include "base/log.h"

#include <unistd.h>

namespace ringmaster {

LogSink StderrLogSink(std::string component) {
  return [component = std::move(component)](LogLevel level, std::string_view message) {
    const char* tag = level == LogLevel::kError ? "E " : level == LogLevel::kWarning ? "W " : "I ";
    std::string line = tag + component + ": ";
    line.append(message);
    line += '\n';
    (void)!write(STDERR_FILENO, line.data(), line.size());
  };
}

}  // namespace ringmaster
