// FamilyStream: a prometheus::Collectable that can hand over its families one at a time, so that a scrape
// of a large one (the operator's per-job series: 14 families x 10,000 jobs) never holds every series, and
// their text, at once. MetricsServer streams such a collectable family by family; Collect() still returns
// them all, for callers that want the vector.
//
// Thread-safety: as Collect — implementations must be callable from any thread.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <iterator>
#include <vector>

namespace ringmaster::metrics {

class FamilyStream : public prometheus::Collectable {
 public:
  using Emit = std::function<void(prometheus::MetricFamily family)>;
  // Calls `emit` with the families in exposition order; the family is the callee's to keep or drop. A large
  // family may come in batches: consecutive families of the same name are one family, its series in order
  // (so a scrape holds one batch of series at a time, not 50,000).
  virtual void CollectEach(const Emit& emit) const = 0;
  // Every family of CollectEach, gathered (batches joined).
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> all;
    CollectEach([&](prometheus::MetricFamily f) {
      if (!all.empty() && all.back().name == f.name) {
        auto& into = all.back().metric;
        into.insert(into.end(), std::make_move_iterator(f.metric.begin()), std::make_move_iterator(f.metric.end()));
      } else {
        all.push_back(std::move(f));
      }
    });
    return all;
  }
};

}  // namespace ringmaster::metrics
