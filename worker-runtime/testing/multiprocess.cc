#include "worker-runtime/testing/multiprocess.h"

#include <gtest/gtest.h>

namespace ringmaster::runtime_testing {

std::vector<runtime::RankOutcome> RunWorld(const WorldOptions& options,
                                           const std::function<void(runtime::RankContext&)>& body) {
  auto outcomes = runtime::RunLocalRanks(options, [&](runtime::RankContext& ctx) {
    body(ctx);
    return ::testing::Test::HasFailure() ? 1 : 0;
  });
  if (!outcomes.ok()) {
    ADD_FAILURE() << "cannot run " << options.size << " ranks: " << outcomes.status();
    std::vector<runtime::RankOutcome> failed(static_cast<size_t>(std::max(options.size, 0)));
    for (size_t r = 0; r < failed.size(); ++r) failed[r].rank = static_cast<int>(r);
    return failed;
  }
  for (const auto& o : *outcomes) {
    if (o.stopped) ADD_FAILURE() << "rank " << o.rank << " did not finish within the deadline (killed)";
  }
  return std::move(outcomes).value();
}

}  // namespace ringmaster::runtime_testing
