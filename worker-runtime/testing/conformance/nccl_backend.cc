// The NCCL backend for the conformance suite: label gpu on a GPU machine, label
// gpu-emulated on the CPU emulation of NCCL and CUDA (RINGMASTER_EMULATED_GPUS).
// Ranks share the visible GPUs round-robin; two ranks on one GPU need NCCL >=
// 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1, which the parent sets before forking
// on a real GPU (it never touches CUDA itself).
#include <stdlib.h>
#include <unistd.h>

#include <chrono>

#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/nccl/nccl_communicator.h"
#include "worker-runtime/testing/conformance/backend.h"
#include "worker-runtime/testing/gpu_test_env.h"

namespace ringmaster::conformance {

const std::vector<ConformanceBackend>& ConformanceBackends() {
  static const std::vector<ConformanceBackend> backends = {{
      "nccl",
      {1, 2},
      [] {
        std::string why = runtime_testing::WhyNoGpuSuite();
        if (why.empty() && !runtime_testing::EmulatedGpus()) ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
        return why;
      },
      [](runtime::RankContext& ctx) -> StatusOr<BackendWorld> {
        RINGMASTER_ASSIGN_OR_RETURN(const int gpus, nccl::VisibleGpus());
        if (gpus <= 0) return UnavailableError("no visible GPU");
        nccl::NcclOptions options;
        options.device = ctx.rank % gpus;
        options.timeout = std::chrono::seconds(60);
        RINGMASTER_ASSIGN_OR_RETURN(auto comm,
                                    nccl::NcclCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, options));
        return BackendWorld{std::move(comm), memory::NewMemoryFor(comm::MemoryKind::kCuda, options.device)};
      },
      [](common::DataType type) { return type == common::DataType::kFloat32 || type == common::DataType::kFloat64; },
  }};
  return backends;
}

}  // namespace ringmaster::conformance
