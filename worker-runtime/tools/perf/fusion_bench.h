// `ringmaster-perf fusion`: N small allreduces submitted asynchronously
// through the Runtime, with tensor fusion on (the configured threshold) and
// off, and the ratio. Rank 0 prints.
#pragma once

#include <cstdio>

#include "tools/perf/local_launcher.h"
#include "tools/perf/perf_options.h"

namespace ringmaster::runtime::perf {

// Returns the process exit code for this rank (0 ok, 2 error, 3 wrong results).
int RunFusionBenchmark(const PerfOptions& options, LocalRank& rank, std::FILE* out);

}  // namespace ringmaster::runtime::perf
