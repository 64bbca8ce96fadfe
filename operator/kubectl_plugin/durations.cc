#include "operator/kubectl_plugin/durations.h"

#include <cctype>
#include <cstdio>

namespace ringmaster::kubectl_plugin {

std::string HumanDuration(std::chrono::milliseconds d) {
  const long long s = d.count() < 0 ? 0 : d.count() / 1000;
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
  }
  return buf;
}

std::string FormatSeconds(double seconds) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  return buf;
}

StatusOr<std::chrono::seconds> ParseDuration(const std::string& text) {
  auto bad = [&text] {
    return InvalidArgumentError("'" + text +
                                "' is not a duration: want seconds or a Go duration, e.g. 300, 90s, 5m, 1h30m");
  };
  if (text.empty()) return bad();
  long long total = 0;
  size_t i = 0;
  bool bare = true;  // digits only: seconds
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return bad();
    long long n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      n = n * 10 + (text[i] - '0');
      if (n > 10LL * 365 * 86400) return bad();
      ++i;
    }
    long long unit = 1;
    if (i < text.size()) {
      bare = false;
      switch (text[i]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        default: return bad();
      }
      ++i;
    } else if (!bare) {
      return bad();  // "1m30": a number without its unit after a unit
    }
    total += n * unit;
  }
  if (total <= 0 || total > 10LL * 365 * 86400) return bad();
  return std::chrono::seconds(total);
}

}  // namespace ringmaster::kubectl_plugin
