#include "operator/cmd/logging.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/time_format.h"

namespace ringmaster::operator_cmd {

namespace {

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

}  // namespace

LogSink MakeLogger(LogFormat format) {
  return [format](LogLevel level, std::string_view message) {
    const std::string ts = FormatRfc3339(std::chrono::system_clock::now(), TimePrecision::kMillis);
    std::string line;
    if (format == LogFormat::kJson) {
      line =
          nlohmann::json{
              {"ts", ts}, {"level", LevelName(level)}, {"logger", "ringmaster-operator"}, {"msg", std::string(message)}}
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      std::string lvl = LevelName(level);
      for (auto& c : lvl) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      line = ts + " " + lvl + (lvl.size() < 7 ? std::string(7 - lvl.size(), ' ') : " ") + std::string(message);
    }
    line += '\n';
    (void)!write(STDERR_FILENO, line.data(), line.size());
  };
}

}  // namespace ringmaster::operator_cmd
