// Command-line options of ringmaster-perf, parsed once into a struct.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/common/dtype.h"
#include "worker-runtime/gloo/allreduce_algorithm.h"

namespace ringmaster::perf {

enum class Collective { kAllreduce, kAllgather, kBroadcast, kReduceScatter, kFusion };
std::string_view CollectiveName(Collective c);

struct PerfOptions {
  Collective collective = Collective::kAllreduce;
  int np = 2;
  comm::Backend backend = comm::Backend::kGloo;
  uint64_t min_bytes = 1024;
  uint64_t max_bytes = 64ull << 20;
  double step_factor = 2.0;
  int iters = 0;  // 0: chosen per size
  int warmup = 1;
  bool check = false;
  bool in_place = false;
  common::DataType type = common::DataType::kFloat32;
  common::ReduceOp op = common::ReduceOp::kSum;
  int root = 0;
  std::chrono::milliseconds timeout{60000};
  int tensors = 1000;            // fusion: allreduces per round
  uint64_t tensor_bytes = 4096;  // fusion: bytes per tensor
  uint64_t fusion_threshold = 64ull << 20;
  // Gloo allreduce: exact (default; RINGMASTER_ALLREDUCE_ALGORITHM when the flag is not given) or the
  // opt-in bcube; shared_memory=false keeps ranks on TCP (for comparison).
  gloo::AllreducePolicy allreduce = gloo::AllreducePolicy::kExact;
  bool no_shared_memory = false;
  bool help = false;
};

// The --help text.
std::string Usage();

// Parses argv[1..]. Errors: InvalidArgument with a message naming the bad flag or value.
StatusOr<PerfOptions> ParsePerfOptions(const std::vector<std::string>& args);

// "1K" -> 1024, "256M", "1G", "4096". Errors: InvalidArgument.
StatusOr<uint64_t> ParseByteSize(const std::string& text);
// 1536 -> "1.5K"-style human form used in the output ("1K", "64M").
std::string FormatBytes(uint64_t bytes);

}  // namespace ringmaster::perf
