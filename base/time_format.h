// RFC 3339 timestamps in UTC ("2026-11-23T06:05:51Z"), the one formatter for Kubernetes fields
// (metav1.Time, MicroTime), log lines and checkpoint manifests. Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace ringmaster {

enum class TimePrecision {
  kSeconds,  // 2026-11-23T06:05:51Z         (metav1.Time)
  kMillis,   // 2026-11-23T06:05:51.123Z     (log lines, checkpoint manifests)
  kMicros,   // 2026-11-23T06:05:51.123456Z  (metav1.MicroTime: Leases, Events)
};

// Formats `t` in UTC, truncated (never rounded) to `precision`.
std::string FormatRfc3339(std::chrono::system_clock::time_point t, TimePrecision precision = TimePrecision::kSeconds);
// The same for milliseconds since the epoch, over the whole int64 range (a system_clock time_point spans
// only about 292 years either side of 1970); kMicros prints the fraction's last three digits as zeros.
std::string FormatUnixMillisRfc3339(int64_t unix_ms, TimePrecision precision = TimePrecision::kMillis);

// Parses "YYYY-MM-DDTHH:MM:SS[.fraction]Z", keeping the fraction to microseconds (so a value written
// with kMillis or kMicros reads back exactly). nullopt when malformed or not in UTC ("Z").
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s);

}  // namespace ringmaster
