#include "worker-runtime/runtime/world.h"

#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/nccl/nccl_communicator.h"

namespace ringmaster::runtime {

StatusOr<comm::Backend> ResolveBackend(comm::Backend requested) {
  if (requested != comm::Backend::kAuto) return requested;
  // A GPU machine whose CUDA is broken is an error, not a reason to train on CPU (VisibleGpus).
  RINGMASTER_ASSIGN_OR_RETURN(int gpus, nccl::VisibleGpus());
  return gpus > 0 ? comm::Backend::kNccl : comm::Backend::kGloo;
}

StatusOr<std::unique_ptr<comm::Communicator>> CreateWorldCommunicator(std::shared_ptr<store::Store> store, int rank,
                                                                      int size, const WorldOptions& options) {
  RINGMASTER_ASSIGN_OR_RETURN(comm::Backend backend, ResolveBackend(options.backend));
  switch (backend) {
    case comm::Backend::kNccl: {
      RINGMASTER_ASSIGN_OR_RETURN(int gpus, nccl::VisibleGpus());
      if (gpus == 0) {
        return UnavailableError(
            "backend nccl requested (RINGMASTER_BACKEND, set by the operator for a pod that asks "
            "for nvidia.com/gpu) but CUDA sees no GPU: check the node's NVIDIA driver and device "
            "plugin and NVIDIA_VISIBLE_DEVICES; set RINGMASTER_BACKEND=gloo to train on the CPU "
            "on purpose");
      }
      nccl::NcclOptions no;
      RINGMASTER_ASSIGN_OR_RETURN(no.device, nccl::DeviceIndex(options.device, options.local_rank));
      no.timeout = options.timeout;
      no.traffic = options.gpu_traffic;
      return nccl::NcclCommunicator::Create(std::move(store), options.prefix, rank, size, no);
    }
    case comm::Backend::kGloo:
    case comm::Backend::kAuto: {
      gloo::GlooOptions go;
      go.host = options.host;
      go.timeout = options.timeout;
      go.allreduce = options.allreduce;
      return gloo::GlooCommunicator::Create(std::move(store), options.prefix, rank, size, go);
    }
  }
  return InternalError("unreachable");
}

}  // namespace ringmaster::runtime
