#include "metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ringmaster::metrics {

namespace {
void AtomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}
}  // namespace

void Counter::Increment(double v) {
  if (!(v >= 0)) return;
  AtomicAdd(value_, v);
}

void Gauge::Increment(double v) { AtomicAdd(value_, v); }

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();  // first bound >= v (le)
  std::lock_guard<std::mutex> lock(mu_);
  counts_[i]++;
  sum_ += v;
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t acc = 0;
  for (uint64_t c : counts_) {
    acc += c;
    s.cumulative.push_back(acc);
  }
  s.sum = sum_;
  s.count = acc;
  return s;
}

std::vector<double> DefaultBuckets() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}; }

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

template <typename T>
T& Family<T>::Add(const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = metrics_[labels];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<T>(DefaultBuckets());
    } else {
      slot = std::make_unique<T>();
    }
  }
  return *slot;
}

template <typename T>
T& Family<T>::Add(const Labels& labels, const std::vector<double>& bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = metrics_[labels];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<T>(bounds);
    } else {
      slot = std::make_unique<T>();
    }
  }
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

std::string SanitizeName(const std::string& name) {
  std::string out = name.empty() ? "_" : name;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) out[i] = '_';
  }
  return out;
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, p);
}

namespace {

std::string LabelText(const Labels& labels, const std::string& extra_key = "", const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += SanitizeName(k) + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extra_key.empty()) {
    if (!first) out += ",";
    out += extra_key + "=\"" + EscapeLabelValue(extra_value) + "\"";
  }
  return out + "}";
}

template <typename T>
void Header(std::string& out, const Family<T>& f, const char* type) {
  out += "# HELP " + f.name() + " " + EscapeHelp(f.help()) + "\n";
  out += "# TYPE " + f.name() + " " + type + "\n";
}

}  // namespace

Family<Counter>& Registry::AddCounterFamily(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : families_)
    if (e.counter && e.counter->name() == SanitizeName(name)) return *e.counter;
  Entry e{MetricType::kCounter, std::make_unique<Family<Counter>>(SanitizeName(name), help), nullptr, nullptr};
  families_.push_back(std::move(e));
  return *families_.back().counter;
}

Family<Gauge>& Registry::AddGaugeFamily(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : families_)
    if (e.gauge && e.gauge->name() == SanitizeName(name)) return *e.gauge;
  Entry e{MetricType::kGauge, nullptr, std::make_unique<Family<Gauge>>(SanitizeName(name), help), nullptr};
  families_.push_back(std::move(e));
  return *families_.back().gauge;
}

Family<Histogram>& Registry::AddHistogramFamily(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : families_)
    if (e.histogram && e.histogram->name() == SanitizeName(name)) return *e.histogram;
  Entry e{MetricType::kHistogram, nullptr, nullptr, std::make_unique<Family<Histogram>>(SanitizeName(name), help)};
  families_.push_back(std::move(e));
  return *families_.back().histogram;
}

std::string Registry::Render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : families_) {
    if (e.counter) {
      Header(out, *e.counter, "counter");
      e.counter->ForEach([&](const Labels& l, const Counter& c) {
        out += e.counter->name() + LabelText(l) + " " + FormatValue(c.Value()) + "\n";
      });
    } else if (e.gauge) {
      Header(out, *e.gauge, "gauge");
      e.gauge->ForEach([&](const Labels& l, const Gauge& g) {
        out += e.gauge->name() + LabelText(l) + " " + FormatValue(g.Value()) + "\n";
      });
    } else if (e.histogram) {
      const std::string& n = e.histogram->name();
      Header(out, *e.histogram, "histogram");
      e.histogram->ForEach([&](const Labels& l, const Histogram& h) {
        Histogram::Snapshot s = h.Collect();
        for (size_t i = 0; i < s.bounds.size(); ++i)
          out += n + "_bucket" + LabelText(l, "le", FormatValue(s.bounds[i])) + " " + std::to_string(s.cumulative[i]) + "\n";
        out += n + "_bucket" + LabelText(l, "le", "+Inf") + " " + std::to_string(s.count) + "\n";
        out += n + "_sum" + LabelText(l) + " " + FormatValue(s.sum) + "\n";
        out += n + "_count" + LabelText(l) + " " + std::to_string(s.count) + "\n";
      });
    }
  }
  return out;
}

}  // namespace ringmaster::metrics
