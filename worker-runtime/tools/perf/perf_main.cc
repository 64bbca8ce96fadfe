// ringmaster-perf: a collective benchmark and checker (see --help).
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "api/worker_env.h"
#include "base/cli.h"
#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/runtime/config.h"
#include "worker-runtime/runtime/local_ranks.h"
#include "worker-runtime/runtime/world.h"
#include "worker-runtime/store/auth.h"
#include "worker-runtime/tools/perf/bench.h"
#include "worker-runtime/tools/perf/fusion_bench.h"
#include "worker-runtime/tools/perf/perf_options.h"

namespace ringmaster::perf {
namespace {

// "13.2" from the CUDA runtime's version call (13020), resolved from the library the ranks loaded (the
// runtime's table has no use for it); "?" when it has none.
std::string CudaVersion(const nccl::CudaApi& cuda, const char* call) {
  using VersionCall = cudaError_t (*)(int*);
  auto get = reinterpret_cast<VersionCall>(::dlsym(cuda.library.handle, call));
  int v = 0;
  if (get == nullptr || get(&v) != cudaSuccess || v <= 0) return "?";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// One comment line naming the NCCL and CUDA runtime the ranks loaded, with their versions (a reader, and
// the GPU kit's report, tests/gpu_kit, learn which NCCL a result is about).
void PrintGpuLibraries(std::FILE* out) {
  std::string line = "# gpu libraries:";
  if (auto nccl_api = nccl::Nccl(); nccl_api.ok()) {
    line += " NCCL " + (*nccl_api)->version.ToString() + " (" + (*nccl_api)->library.path + ")";
  } else {
    line += " NCCL not loaded (" + nccl_api.status().ToString() + ")";
  }
  if (auto cuda_api = nccl::Cuda(); cuda_api.ok()) {
    line += "; CUDA runtime " + CudaVersion(**cuda_api, "cudaRuntimeGetVersion") + " (" + (*cuda_api)->library.path +
            "), driver API " + CudaVersion(**cuda_api, "cudaDriverGetVersion");
    if ((*cuda_api)->library.emulated) line += "; emulated (RINGMASTER_EMULATED_GPUS)";
  } else {
    line += "; CUDA runtime not loaded (" + cuda_api.status().ToString() + ")";
  }
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

int RankMain(const PerfOptions& options, const runtime::RuntimeConfig& config, runtime::RankContext& lr) {
  if (options.collective == Collective::kFusion) return RunFusionBenchmark(options, config, lr, stdout);
  runtime::WorldOptions wo;
  wo.backend = options.backend;
  wo.timeout = options.timeout;
  wo.local_rank = lr.rank;  // one GPU per rank for NCCL
  StatusOr<std::unique_ptr<comm::Communicator>> comm = std::unique_ptr<comm::Communicator>();
  if (options.backend == comm::Backend::kGloo) {
    // As CreateWorldCommunicator, plus the allreduce options it does not carry.
    gloo::GlooOptions go;
    go.host = config.host;
    go.timeout = options.timeout;
    go.allreduce = options.allreduce != gloo::AllreducePolicy::kExact ? options.allreduce : config.allreduce;
    go.shared_memory = !options.no_shared_memory;
    comm = gloo::GlooCommunicator::Create(lr.store, wo.prefix, lr.rank, lr.size, go);
    if (lr.rank == 0) {
      std::fprintf(stdout, "# gloo allreduce: %s, shared memory when every rank is on this host: %s\n",
                   std::string(gloo::AllreducePolicyName(go.allreduce)).c_str(), go.shared_memory ? "on" : "off");
    }
  } else {
    comm = runtime::CreateWorldCommunicator(lr.store, lr.rank, lr.size, wo);
  }
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: cannot create the communicator: %s\n", lr.rank, comm.status().ToString().c_str());
    return 2;
  }
  if (lr.rank == 0 && (*comm)->backend() == comm::Backend::kNccl) PrintGpuLibraries(stdout);
  int gpus = nccl::VisibleGpuCount();
  auto memory = memory::NewMemoryFor((*comm)->memory(), gpus > 0 ? wo.local_rank % gpus : 0);
  auto result = RunBenchmark(options, **comm, *memory, *lr.store, stdout);
  if (!result.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", lr.rank, result.status().ToString().c_str());
    return 2;
  }
  return result->wrong_elements > 0 ? 3 : 0;
}

// A fresh job secret for the store (hex of a random nonce).
StatusOr<std::string> RandomSecret() {
  RINGMASTER_ASSIGN_OR_RETURN(auto nonce, store::RandomNonce());
  std::string secret;
  for (unsigned char c : nonce) secret += "0123456789abcdef"[c >> 4], secret += "0123456789abcdef"[c & 15];
  return secret;
}

int Main(int argc, char** argv) {
  auto options = ParsePerfOptions(cli::Args(argc, argv));
  if (auto exit_code = cli::ExitEarly("ringmaster-perf", options, Usage)) return *exit_code;
  // The runtime's RINGMASTER_* tuning, read once; the flags above win where they overlap.
  auto config = runtime::ParseRuntimeConfig(api::EnvironmentSnapshot());
  if (!config.ok()) {
    std::fprintf(stderr, "ringmaster-perf: %s\n", config.status().ToString().c_str());
    return cli::kExitUsage;
  }
  auto secret = RandomSecret();
  if (!secret.ok()) {
    std::fprintf(stderr, "ringmaster-perf: %s\n", secret.status().ToString().c_str());
    return 2;
  }
  runtime::LocalRanksOptions ranks;
  ranks.size = options->np;
  ranks.secret = *secret;
  ranks.deadline = std::chrono::milliseconds(0);  // a benchmark runs as long as it takes
  ranks.stop_others_on_failure = true;            // the others would only wait for it
  auto outcomes =
      runtime::RunLocalRanks(ranks, [&](runtime::RankContext& lr) { return RankMain(*options, *config, lr); });
  if (!outcomes.ok()) {
    std::fprintf(stderr, "ringmaster-perf: %s\n", outcomes.status().ToString().c_str());
    return 2;
  }
  const int code = runtime::FirstFailureCode(*outcomes);
  if (code != 0) std::fprintf(stderr, "ringmaster-perf: %s\n", runtime::DescribeFailures(*outcomes).c_str());
  if (code == 3) std::fprintf(stderr, "ringmaster-perf: some results were wrong\n");
  return code;
}

}  // namespace
}  // namespace ringmaster::perf

int main(int argc, char** argv) { return ringmaster::perf::Main(argc, argv); }
