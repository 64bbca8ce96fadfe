// Test support: the GoogleTest adapter of the one "run N ranks" helper
// (runtime/local_ranks.h). RunWorld forks N ranks on loopback with the store
// served by rank 0 and runs a void body in each; GoogleTest EXPECT/ASSERT failures in a
// child are printed as usual and turn into its exit code 1, which the parent
// sees through RankOutcome (EXPECT_OK(outcome) prints how a rank ended). A rank
// still running at the deadline is killed and reported as a test failure.
//
// Thread-safety: call from the test's thread before it starts other threads.
#pragma once

#include <functional>
#include <vector>

#include "worker-runtime/runtime/local_ranks.h"

namespace ringmaster::runtime_testing {

using WorldOptions = runtime::LocalRanksOptions;

// Forks options.size ranks running body(context). Returns one outcome per rank
// (all failed when the ranks could not be started; the test fails then too).
std::vector<runtime::RankOutcome> RunWorld(const WorldOptions& options,
                                           const std::function<void(runtime::RankContext&)>& body);

}  // namespace ringmaster::runtime_testing
