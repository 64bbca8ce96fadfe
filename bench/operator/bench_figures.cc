#include "bench/operator/bench_figures.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace ringmaster::bench {

double Since(Clock::time_point t) { return Seconds(t, Clock::now()); }

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

ProcessUsage UsageOf(pid_t pid) {
  ProcessUsage u;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) u.peak_rss_mib = std::stod(line.substr(6)) / 1024.0;
    if (line.rfind("VmRSS:", 0) == 0) u.rss_mib = std::stod(line.substr(6)) / 1024.0;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), {});
  auto close = all.rfind(')');
  if (close == std::string::npos || close + 2 > all.size()) return u;
  std::istringstream fields(all.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(fields)), {});
  if (f.size() > 13) u.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return u;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string Format(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace ringmaster::bench
