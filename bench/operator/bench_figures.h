// Small helpers the benchmarks share to print figures: percentiles, a process's memory and CPU from
// /proc, the machine's load average, and progress lines that appear at once. Test support only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ringmaster::bench {

using Clock = std::chrono::steady_clock;

// Seconds from `t` to now.
double Since(Clock::time_point t);
// Seconds from `a` to `b`.
double Seconds(Clock::time_point a, Clock::time_point b);

// The p-th percentile (0..1) of `v` by nearest rank; 0 for an empty `v`.
double Percentile(std::vector<double> v, double p);

struct ProcessUsage {
  double peak_rss_mib = 0;  // VmHWM
  double rss_mib = 0;       // VmRSS
  double cpu_seconds = 0;   // user + system
};
// Reads /proc/<pid>; zeros when the process is gone.
ProcessUsage UsageOf(pid_t pid);

// "/proc/loadavg"'s first three numbers, e.g. "2.04 1.39 1.41".
std::string LoadAverage();

// printf-style formatting into a std::string.
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Prints `line` and flushes stdout, so progress shows while a long run goes on.
void Say(const std::string& line);

}  // namespace ringmaster::bench
