// Histogram bucket boundaries for prometheus::Histogram (whose BucketBoundaries is a vector<double>).
// Thread-safety: pure functions.
#pragma once

#include <vector>

namespace ringmaster::metrics {

// `count` upper bounds: start, start*factor, start*factor^2, ... (+Inf is implicit). Requires start > 0,
// factor > 1, count >= 1; otherwise returns an empty list (one +Inf bucket).
inline std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  if (start <= 0 || factor <= 1 || count < 1) return bounds;
  bounds.reserve(static_cast<size_t>(count));
  for (double b = start; count-- > 0; b *= factor) bounds.push_back(b);
  return bounds;
}

}  // namespace ringmaster::metrics
