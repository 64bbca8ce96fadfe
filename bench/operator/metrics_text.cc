#include "bench/operator/metrics_text.h"

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace ringmaster::bench {

namespace {

// Calls fn(labels, value) for each sample of metric `name` (exactly that name, with or without labels).
template <typename Fn>
void ForEachSample(const std::string& exposition, const std::string& name, Fn fn) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind(name, 0) != 0) continue;
    char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    std::string labels;
    if (next == '{') labels = line.substr(name.size() + 1, line.find('}') - name.size() - 1);
    std::string value = line.substr(line.rfind(' ') + 1);
    double v = value == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(value.c_str(), nullptr);
    fn(labels, v);
  }
}

}  // namespace

double SumOf(const std::string& exposition, const std::string& name, const std::string& label_filter) {
  double sum = 0;
  ForEachSample(exposition, name, [&](const std::string& labels, double v) {
    if (labels.find(label_filter) != std::string::npos) sum += v;
  });
  return sum;
}

namespace {

// Cumulative bucket counts by upper bound, summed over the series whose labels contain `label_filter`.
std::map<double, double> Buckets(const std::string& exposition, const std::string& name,
                                 const std::string& label_filter) {
  std::map<double, double> cumulative;
  ForEachSample(exposition, name + "_bucket", [&](const std::string& labels, double v) {
    if (labels.find(label_filter) == std::string::npos) return;
    auto le = labels.find("le=\"");
    if (le == std::string::npos) return;
    std::string bound = labels.substr(le + 4, labels.find('"', le + 4) - le - 4);
    double b = bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(bound.c_str(), nullptr);
    cumulative[b] += v;
  });
  return cumulative;
}

double Quantile(const std::map<double, double>& cumulative, double q) {
  if (cumulative.empty() || cumulative.rbegin()->second <= 0) return 0;
  double want = q * cumulative.rbegin()->second;
  for (const auto& [bound, count] : cumulative)
    if (count >= want) return bound;
  return std::numeric_limits<double>::infinity();
}

}  // namespace

double HistogramQuantile(const std::string& exposition, const std::string& name, double q,
                         const std::string& label_filter) {
  return Quantile(Buckets(exposition, name, label_filter), q);
}

double HistogramQuantileBetween(const std::string& before, const std::string& after, const std::string& name,
                                double q) {
  auto delta = Buckets(after, name, "");
  for (const auto& [bound, count] : Buckets(before, name, "")) delta[bound] -= count;
  return Quantile(delta, q);
}

}  // namespace ringmaster::bench
