#include "base/time_format.h"

#include <cstdio>
#include <ctime>

namespace ringmaster {

namespace {

// `secs` since the epoch plus `frac_us` in [0, 1 s), in UTC.
std::string Format(long long secs, long long frac_us, TimePrecision precision) {
  const std::time_t time = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&time, &tm);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                        tm.tm_hour, tm.tm_min, tm.tm_sec);
  switch (precision) {
    case TimePrecision::kSeconds: break;
    case TimePrecision::kMillis: n += std::snprintf(buf + n, sizeof buf - n, ".%03lld", frac_us / 1000); break;
    case TimePrecision::kMicros: n += std::snprintf(buf + n, sizeof buf - n, ".%06lld", frac_us); break;
  }
  std::snprintf(buf + n, sizeof buf - n, "Z");
  return buf;
}

// Floor division, so instants before 1970 keep a fraction in [0, 1 s).
void SplitFloor(long long v, long long unit, long long* whole, long long* rest) {
  *whole = v / unit;
  *rest = v % unit;
  if (*rest < 0) {
    *rest += unit;
    --*whole;
  }
}

}  // namespace

std::string FormatRfc3339(std::chrono::system_clock::time_point t, TimePrecision precision) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  long long secs = 0, frac_us = 0;
  SplitFloor(us, 1000000, &secs, &frac_us);
  return Format(secs, frac_us, precision);
}

std::string FormatUnixMillisRfc3339(int64_t unix_ms, TimePrecision precision) {
  long long secs = 0, frac_ms = 0;
  SplitFloor(unix_ms, 1000, &secs, &frac_ms);
  return Format(secs, frac_ms * 1000, precision);
}

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  size_t pos = static_cast<size_t>(consumed);
  long long micros = 0;  // the fraction, to microseconds; further digits are dropped
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    long long scale = 100000;
    for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, scale /= 10) micros += (s[pos] - '0') * scale;
  }
  if (pos + 1 != s.size() || s[pos] != 'Z') return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::time_t secs = timegm(&tm);
  if (secs == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(secs) + std::chrono::microseconds(micros);
}

}  // namespace ringmaster
