// The runtime's configuration, parsed once from the environment (or any
// key/value map, read through api::WorkerEnv) into a struct. Nothing else in
// the runtime reads getenv. The variables (api/names.h, env::k*):
//
//   RINGMASTER_BACKEND                 auto | gloo | nccl           (auto)
//   RINGMASTER_COLLECTIVE_TIMEOUT_MS   per collective and rendezvous (60000), at most a year
//   RINGMASTER_FUSION_THRESHOLD_BYTES  fusion buffer size, 0 = off   (67108864)
//   RINGMASTER_CYCLE_TIME_MS           fusion cycle, may be fractional (3.5)
//   RINGMASTER_TIMELINE                Chrome-trace path; "{rank}" is replaced by the
//                                      rank, otherwise only rank 0 writes (unset = off)
//   RINGMASTER_PROCESS_SETS            static sets, "0,2;1,2,3"      (none)
//   RINGMASTER_ALLREDUCE_ALGORITHM     exact | bcube                 (exact)
//       CPU (Gloo) allreduce. exact: bit-identical to torch's ProcessGroupGloo (Gloo's ring order of
//       additions; through shared memory between ranks on one host). bcube: opt-in, for ranks that
//       cannot share memory (several hosts): Gloo's BCube over TCP up to 1 MiB per rank, where it beats
//       the ring, but it adds in another order, so results may differ from torch's Gloo in the last bits
//       (gloo/allreduce_algorithm.h). Every rank must set the same.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/comm/device_traffic.h"
#include "worker-runtime/gloo/allreduce_algorithm.h"
#include "worker-runtime/runtime/world.h"

namespace ringmaster::runtime {

// Makes a communicator as CreateWorldCommunicator does (world.h): same arguments, same errors.
using CommunicatorFactory = std::function<StatusOr<std::unique_ptr<comm::Communicator>>(
    std::shared_ptr<store::Store> store, int rank, int size, const WorldOptions& options)>;

struct RuntimeConfig {
  comm::Backend backend = comm::Backend::kAuto;
  std::chrono::milliseconds timeout{60000};
  size_t fusion_threshold_bytes = 64u << 20;
  std::chrono::microseconds cycle_time{3500};
  std::string timeline_path;
  std::vector<std::vector<int>> process_sets;
  std::string host = "127.0.0.1";  // Gloo listen address
  // RINGMASTER_ALLREDUCE_ALGORITHM.
  gloo::AllreducePolicy allreduce = gloo::AllreducePolicy::kExact;
  // This rank's index among the ranks on its node (Horovod's local rank). Not from the environment: the
  // program sets it (the elastic driver from each generation's membership: it can change after a
  // rebuild; ringmaster-perf from its local ranks).
  int local_rank = 0;
  // Under NCCL, the CUDA device: `device`, or -1: local_rank (nccl::DeviceIndex); an index beyond the visible
  // GPUs is refused (InvalidArgument) unless NCCL_MULTI_RANK_GPU_ENABLE=1 lets several ranks share one GPU.
  // From RINGMASTER_DEVICE (the launcher's per-process assignment). The elastic driver pins the device of
  // its first generation when none is given: a process's tensors stay on one GPU while ranks move.
  int device = -1;
  std::string name = "rt";  // store key prefix of this runtime's communicators
  // Not from the environment: the program's counter of NCCL bytes per GPU, kept across generations
  // (WorkerMetrics' ringmaster_worker_gpu_nccl_bytes_total). May be null.
  std::shared_ptr<comm::DeviceTraffic> gpu_traffic;
  // Not from the environment: makes the world's and AddGroup's communicators instead of
  // CreateWorldCommunicator (a test's communicator). Null: CreateWorldCommunicator.
  CommunicatorFactory communicator_factory;
};

// Errors: InvalidArgument naming the variable and the bad value (any of the
// worker's variables, api::WorkerEnv::FromEnvironment).
StatusOr<RuntimeConfig> ParseRuntimeConfig(const std::map<std::string, std::string>& env);

}  // namespace ringmaster::runtime
