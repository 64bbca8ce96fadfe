// The backend under test of the communicator conformance suite
// (conformance_test.cc): one test binary per backend links the suite with one
// definition of ConformanceBackends() (gloo_backend.cc, nccl_backend.cc).
//
// Thread-safety: the descriptors are constants; Create runs in a forked rank.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/runtime/local_ranks.h"

namespace ringmaster::conformance {

// A communicator of the backend and the memory its buffers live in.
struct BackendWorld {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<memory::Memory> memory;
};

struct ConformanceBackend {
  std::string name;              // for test names: "gloo", "nccl"
  std::vector<int> world_sizes;  // the suite runs once per size
  // Empty when this machine can run the backend, else why not (the tests fail). Runs in the parent.
  std::function<std::string()> unavailable;
  // Builds this rank's world communicator over ctx.store. Runs in the forked rank.
  std::function<StatusOr<BackendWorld>(runtime::RankContext& ctx)> create;
  // Whether kAvg of `type` matches the host reference bit for bit (NCCL rounds 16-bit and
  // integer averages its own way).
  std::function<bool(common::DataType type)> exact_average;
};

// The backends this binary tests.
const std::vector<ConformanceBackend>& ConformanceBackends();

}  // namespace ringmaster::conformance
