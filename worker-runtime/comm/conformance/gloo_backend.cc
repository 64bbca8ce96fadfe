// The Gloo backend for the conformance suite (label unit).
#include <chrono>

#include "comm/conformance/backend.h"
#include "gloo/gloo_communicator.h"

namespace ringmaster::runtime::conformance {

const std::vector<ConformanceBackend>& ConformanceBackends() {
  static const std::vector<ConformanceBackend> backends = {{
      "gloo",
      {1, 2, 3, 4},
      [] { return std::string(); },
      [](testing::RankContext& ctx) -> StatusOr<BackendWorld> {
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
