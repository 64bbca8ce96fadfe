// Reading figures out of a Prometheus text exposition (an operator's /metrics): the sum of a family's
// samples, and a quantile estimated from a histogram's buckets. Test support only; pure functions.
#pragma once

#include <string>

namespace ringmaster::bench {

// The sum of every sample of `name` (e.g. "rest_client_requests_total") whose labels contain
// `label_filter` (e.g. "controller=\"trainingjob\""; "" for all). 0 when there is none.
double SumOf(const std::string& exposition, const std::string& name, const std::string& label_filter = "");

// The q-quantile (0..1) of histogram `name` (its _bucket samples, summed over the series whose labels
// contain `label_filter`), as the upper bound of the bucket it falls in, as histogram_quantile does
// without interpolation. 0 when the histogram is empty; +Inf when it falls in the last bucket.
double HistogramQuantile(const std::string& exposition, const std::string& name, double q,
                         const std::string& label_filter = "");

// The same quantile over what happened between two expositions of one process (`after`'s buckets
// minus `before`'s): the figure for one phase of a run.
double HistogramQuantileBetween(const std::string& before, const std::string& after, const std::string& name, double q);

}  // namespace ringmaster::bench
