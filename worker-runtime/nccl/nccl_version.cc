#include "worker-runtime/nccl/nccl_version.h"

#include <nccl.h>

#include "worker-runtime/nccl/gpu_api.h"

namespace ringmaster::nccl {

std::string Version::ToString() const {
  return std::to_string(major()) + "." + std::to_string(minor()) + "." + std::to_string(patch());
}

Version CompiledVersion() { return Version{NCCL_VERSION_CODE}; }

StatusOr<Version> LoadedVersion() {
  RINGMASTER_ASSIGN_OR_RETURN(const NcclApi* api, Nccl());
  return api->version;
}

}  // namespace ringmaster::nccl
