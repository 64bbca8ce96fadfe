// The Gloo backend for the conformance suite (label unit).
#include <chrono>

#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/testing/conformance/backend.h"

namespace ringmaster::runtime::conformance {

const std::vector<ConformanceBackend>& ConformanceBackends() {
  static const std::vector<ConformanceBackend> backends = {{
      "gloo",
      {1, 2, 3, 4},
      [] { return std::string(); },
      [](RankContext& ctx) -> StatusOr<BackendWorld> {
        GlooOptions options;
        options.timeout = std::chrono::seconds(20);
        RINGMASTER_ASSIGN_OR_RETURN(auto comm, GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, options));
        return BackendWorld{std::move(comm), NewHostMemory()};
      },
      [](DataType) { return true; },
  }};
  return backends;
}

}  // namespace ringmaster::runtime::conformance
