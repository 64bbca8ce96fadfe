#include "cmd/logging.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

namespace ringmaster::operator_cmd {

namespace {

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

const char* LevelName(kube::LogLevel level) {
  switch (level) {
    case kube::LogLevel::kInfo: return "info";
    case kube::LogLevel::kWarning: return "warning";
    case kube::LogLevel::kError: return "error";
  }
  return "info";
}

}  // namespace

kube::LogFn MakeLogger(LogFormat format) {
  return [format](kube::LogLevel level, std::string_view message) {
    std::string line;
    if (format == LogFormat::kJson) {
      line = nlohmann::json{{"ts", Timestamp()}, {"level", LevelName(level)}, {"logger", "ringmaster-operator"},
                            {"msg", std::string(message)}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      std::string lvl = LevelName(level);
      for (auto& c : lvl) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      line = Timestamp() + " " + lvl + (lvl.size() < 7 ? std::string(7 - lvl.size(), ' ') : " ") + std::string(message);
    }
    line += '\n';
    (void)!write(STDERR_FILENO, line.data(), line.size());
  };
}

}  // namespace ringmaster::operator_cmd
