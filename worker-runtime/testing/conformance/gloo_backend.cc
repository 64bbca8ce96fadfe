// The Gloo backend for the conformance suite (label unit).
#include <chrono>

#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/testing/conformance/backend.h"

namespace ringmaster::conformance {

const std::vector<ConformanceBackend>& ConformanceBackends() {
  static const std::vector<ConformanceBackend> backends = {{
      "gloo",
      {1, 2, 3, 4},
      [] { return std::string(); },
      [](runtime::RankContext& ctx) -> StatusOr<BackendWorld> {
        gloo::GlooOptions options;
        options.timeout = std::chrono::seconds(20);
        RINGMASTER_ASSIGN_OR_RETURN(auto comm,
                                    gloo::GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, options));
        return BackendWorld{std::move(comm), memory::NewHostMemory()};
      },
      [](common::DataType) { return true; },
  }};
  return backends;
}

}  // namespace ringmaster::conformance
