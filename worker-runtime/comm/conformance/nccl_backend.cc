// The NCCL backend for the conformance suite (label gpu: it compiles everywhere
// and runs on a GPU machine). Ranks share the visible GPUs round-robin; two
// ranks on one GPU need NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1, which
// the parent sets before forking (it never touches CUDA itself).
#include <stdlib.h>
#include <unistd.h>

#include <chrono>

#include "comm/conformance/backend.h"
#include "nccl/gpu_probe.h"
#include "nccl/nccl_communicator.h"

namespace ringmaster::runtime::conformance {

const std::vector<ConformanceBackend>& ConformanceBackends() {
  static const std::vector<ConformanceBackend> backends = {{
      "nccl",
      {1, 2},
      [] {
        if (::access("/dev/nvidia0", F_OK) != 0 && ::access("/dev/nvidiactl", F_OK) != 0) {
          return std::string("no GPU on this machine");
        }
        ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
        return std::string();
      },
      [](testing::RankContext& ctx) -> StatusOr<BackendWorld> {
        const int gpus = nccl::VisibleGpuCount();
        if (gpus <= 0) return UnavailableError("no visible GPU");
        NcclOptions options;
        options.device = ctx.rank % gpus;
        options.timeout = std::chrono::seconds(60);
        RINGMASTER_ASSIGN_OR_RETURN(auto comm, NcclCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, options));
        return BackendWorld{std::move(comm), NewMemoryFor(MemoryKind::kCuda, options.device)};
      },
      [](DataType type) { return type == DataType::kFloat32 || type == DataType::kFloat64; },
  }};
  return backends;
}

}  // namespace ringmaster::runtime::conformance
