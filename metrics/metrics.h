// A small in-house metrics library with a prometheus-cpp-like API (prometheus-cpp is not packaged
// in Debian). A Registry owns Families; a Family owns one metric per distinct label set.
//
//   metrics::Registry registry;
//   auto& requests = registry.AddCounterFamily("rest_client_requests_total", "Requests by verb and code.");
//   requests.Add({{"verb", "get"}, {"code", "200"}}).Increment();
//   std::string text = registry.Render();  // Prometheus text exposition format 0.0.4
//
// Ownership: references returned by Add*/Add stay valid for the Registry's lifetime.
// Thread-safety: everything here is thread-safe; metric updates are lock-free or take a short lock.
// Errors: metric and label names are validated on registration; an invalid name is a programming
// error and is rejected by returning the family with the name sanitized (never throws).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ringmaster::metrics {

using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  // `v` must be >= 0 (negative values are ignored: counters only go up).
  void Increment(double v = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Increment(double v = 1.0);
  void Decrement(double v = 1.0) { Increment(-v); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: strictly increasing upper bounds; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Collect() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // guarded by mu_; per bucket, last is +Inf
  double sum_ = 0;                // guarded by mu_
};

// Default latency buckets in seconds (Prometheus client defaults).
std::vector<double> DefaultBuckets();
// `count` buckets: start, start*factor, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);

enum class MetricType { kCounter, kGauge, kHistogram };

template <typename T>
class Family {
 public:
  Family(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}
  // Returns the metric for `labels`, creating it on first use (histograms with `bounds`).
  T& Add(const Labels& labels);
  T& Add(const Labels& labels, const std::vector<double>& bounds);  // histograms only
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  // Calls fn(labels, metric) for each metric in label order, under the family's lock.
  template <typename Fn>
  void ForEach(Fn fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [labels, metric] : metrics_) fn(labels, *metric);
  }

 private:
  const std::string name_;
  const std::string help_;
  mutable std::mutex mu_;
  std::map<Labels, std::unique_ptr<T>> metrics_;  // guarded by mu_
};

class Registry {
 public:
  Family<Counter>& AddCounterFamily(const std::string& name, const std::string& help);
  Family<Gauge>& AddGaugeFamily(const std::string& name, const std::string& help);
  Family<Histogram>& AddHistogramFamily(const std::string& name, const std::string& help);
  // The text exposition format 0.0.4 of every family, in registration order.
  std::string Render() const;

 private:
  struct Entry {
    MetricType type;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
  };
  mutable std::mutex mu_;
  std::vector<Entry> families_;  // guarded by mu_
};

// Exposition helpers (exposed for tests).
std::string EscapeLabelValue(const std::string& v);  // \ → \\, " → \", newline → \n
std::string EscapeHelp(const std::string& v);        // \ → \\, newline → \n
std::string FormatValue(double v);                   // Go-compatible: +Inf, -Inf, NaN, shortest round-trip
std::string SanitizeName(const std::string& name);   // [a-zA-Z_:][a-zA-Z0-9_:]*

}  // namespace ringmaster::metrics
