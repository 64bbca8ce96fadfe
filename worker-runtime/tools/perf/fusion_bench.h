// `ringmaster-perf fusion`: N small allreduces submitted asynchronously
// through the Runtime, with tensor fusion on (the configured threshold) and
// off, and the ratio. Rank 0 prints.
#pragma once

#include <cstdio>

#include "worker-runtime/runtime/config.h"
#include "worker-runtime/runtime/local_ranks.h"
#include "worker-runtime/tools/perf/perf_options.h"

namespace ringmaster::perf {

// Returns the process exit code for this rank (0 ok, 2 error, 3 wrong results).
// `config` is the runtime configuration read at start (RINGMASTER_*); the flags override
// backend, timeout and the fusion threshold of the fused run.
int RunFusionBenchmark(const PerfOptions& options, const runtime::RuntimeConfig& config, runtime::RankContext& rank,
                       std::FILE* out);

}  // namespace ringmaster::perf
