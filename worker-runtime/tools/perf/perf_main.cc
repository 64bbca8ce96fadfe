// ringmaster-perf: a collective benchmark and checker (see --help).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "api/worker_env.h"
#include "base/cli.h"
#include "tools/perf/bench.h"
#include "tools/perf/fusion_bench.h"
#include "testing/local_ranks.h"
#include "tools/perf/perf_options.h"
#include "nccl/gpu_probe.h"
#include "runtime/config.h"
#include "runtime/world.h"
#include "store/auth.h"

namespace ringmaster::runtime::perf {
namespace {

int RankMain(const PerfOptions& options, const RuntimeConfig& config, testing::RankContext& lr) {
  if (options.collective == Collective::kFusion) return RunFusionBenchmark(options, config, lr, stdout);
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

// A fresh job secret for the store (hex of a random nonce).
StatusOr<std::string> RandomSecret() {
  RINGMASTER_ASSIGN_OR_RETURN(auto nonce, RandomNonce());
  std::string secret;
  for (unsigned char c : nonce) secret += "0123456789abcdef"[c >> 4], secret += "0123456789abcdef"[c & 15];
  return secret;
}

}  // namespace
}  // namespace ringmaster::runtime::perf

int main(int argc, char** argv) {
  using namespace ringmaster::runtime;
  auto options = perf::ParsePerfOptions(ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly("ringmaster-perf", options, perf::Usage)) return *exit_code;
  // The runtime's RINGMASTER_* tuning, read once; the flags above win where they overlap.
  auto config = ParseRuntimeConfig(ringmaster::api::EnvironmentSnapshot());
  if (!config.ok()) {
    std::fprintf(stderr, "ringmaster-perf: %s\n", config.status().ToString().c_str());
    return ringmaster::cli::kExitUsage;
  }
  auto secret = perf::RandomSecret();
  if (!secret.ok()) {
    std::fprintf(stderr, "ringmaster-perf: %s\n", secret.status().ToString().c_str());
    return 2;
  }
  testing::LocalRanksOptions ranks;
  ranks.size = options->np;
  ranks.secret = *secret;
  ranks.deadline = std::chrono::milliseconds(0);  // a benchmark runs as long as it takes
  ranks.stop_others_on_failure = true;            // the others would only wait for it
  auto outcomes = testing::RunLocalRanks(ranks, [&](testing::RankContext& lr) {
    return perf::RankMain(*options, *config, lr);
  });
  if (!outcomes.ok()) {
    std::fprintf(stderr, "ringmaster-perf: %s\n", outcomes.status().ToString().c_str());
    return 2;
  }
  const int code = testing::FirstFailureCode(*outcomes);
  if (code != 0) std::fprintf(stderr, "ringmaster-perf: %s\n", testing::DescribeFailures(*outcomes).c_str());
  if (code == 3) std::fprintf(stderr, "ringmaster-perf: some results were wrong\n");
  return code;
}
