// Creating the world communicator of a generation: picks the backend
// (auto = NCCL when a GPU is visible, else Gloo) and runs its rendezvous
// through the store.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/comm/device_traffic.h"
#include "worker-runtime/gloo/allreduce_algorithm.h"
#include "worker-runtime/store/store.h"

namespace ringmaster::runtime {

struct WorldOptions {
  comm::Backend backend = comm::Backend::kAuto;
  std::chrono::milliseconds timeout{60000};          // rendezvous and per collective
  int local_rank = 0;                                // NCCL: CUDA device = local_rank ...
  int device = -1;                                   // ... unless this is >= 0 (nccl::DeviceIndex: no wrapping)
  std::string host = "127.0.0.1";                    // Gloo: address peers reach this rank on
  std::string prefix = "world";                      // store key prefix, unique per communicator in a generation
  std::shared_ptr<comm::DeviceTraffic> gpu_traffic;  // NCCL: where collective bytes are counted (may be null)
  gloo::AllreducePolicy allreduce = gloo::AllreducePolicy::kExact;  // Gloo: RINGMASTER_ALLREDUCE_ALGORITHM
};

// The backend `auto` resolves to on this machine (never kAuto): NCCL when a GPU is visible, Gloo on a
// machine without GPUs. Errors: Unavailable when GPUs were given to this process but CUDA cannot use
// them (nccl::VisibleGpus) -- such a rank must not train on CPU while its peers use NCCL.
StatusOr<comm::Backend> ResolveBackend(comm::Backend requested);

// Errors: Unavailable (NCCL requested without a GPU), and those of the backend's Create.
StatusOr<std::unique_ptr<comm::Communicator>> CreateWorldCommunicator(std::shared_ptr<store::Store> store, int rank,
                                                                      int size, const WorldOptions& options);

}  // namespace ringmaster::runtime
