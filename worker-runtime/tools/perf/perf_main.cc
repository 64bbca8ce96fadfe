// ringmaster-perf: a collective benchmark and checker (see --help).
#include <cstdio>
#include <string>
#include <vector>

#include "base/cli.h"
#include "tools/perf/bench.h"
#include "tools/perf/fusion_bench.h"
#include "tools/perf/local_launcher.h"
#include "tools/perf/perf_options.h"
#include "nccl/gpu_probe.h"
#include "runtime/world.h"

namespace ringmaster::runtime::perf {
namespace {

int RankMain(const PerfOptions& options, LocalRank& lr) {
  if (options.collective == Collective::kFusion) return RunFusionBenchmark(options, lr, stdout);
  WorldOptions wo;
  wo.backend = options.backend;
  wo.timeout = options.timeout;
  wo.local_rank = lr.rank;  // one GPU per rank for NCCL
  auto comm = CreateWorldCommunicator(lr.store, lr.rank, lr.size, wo);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: cannot create the communicator: %s\n", lr.rank, comm.status().ToString().c_str());
    return 2;
  }
  int gpus = nccl::VisibleGpuCount();
  auto memory = NewMemoryFor((*comm)->memory(), gpus > 0 ? wo.local_rank % gpus : 0);
  auto result = RunBenchmark(options, **comm, *memory, *lr.store, stdout);
  if (!result.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", lr.rank, result.status().ToString().c_str());
    return 2;
  }
  return result->wrong_elements > 0 ? 3 : 0;
}

}  // namespace
}  // namespace ringmaster::runtime::perf

int main(int argc, char** argv) {
  using namespace ringmaster::runtime;
  auto options = perf::ParsePerfOptions(ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly("ringmaster-perf", options, perf::Usage)) return *exit_code;
  int code = RunLocalRanks(options->np, [&](LocalRank& lr) { return perf::RankMain(*options, lr); });
  if (code == 3) std::fprintf(stderr, "ringmaster-perf: some results were wrong\n");
  return code;
}
