// The per-rank loop of ringmaster-perf: for each size, run the collective,
// time it, optionally check it, and report through the store to rank 0, which
// prints one line per size as it goes.
#pragma once

#include <cstdio>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/store/store.h"
#include "worker-runtime/tools/perf/perf_options.h"

namespace ringmaster::perf {

struct BenchResult {
  uint64_t wrong_elements = 0;  // summed over ranks and sizes (rank 0 only)
};

// Runs the benchmark on this rank. Rank 0 writes the table to `out`.
// Errors: whatever the communicator or store return (Aborted when a peer died).
StatusOr<BenchResult> RunBenchmark(const PerfOptions& options, comm::Communicator& comm, memory::Memory& memory,
                                   store::Store& store, std::FILE* out);

// nccl-tests' bus bandwidth factor for n ranks.
double BusBandwidthFactor(Collective collective, int n);

}  // namespace ringmaster::perf
