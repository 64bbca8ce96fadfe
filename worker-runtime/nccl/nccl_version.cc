#include "nccl/nccl_version.h"

#include <nccl.h>

namespace ringmaster::nccl {

std::string Version::ToString() const {
  return std::to_string(major()) + "." + std::to_string(minor()) + "." + std::to_string(patch());
}

Version CompiledVersion() { return Version{NCCL_VERSION_CODE}; }

StatusOr<Version> LoadedVersion() {
  int code = 0;
  ncclResult_t result = ncclGetVersion(&code);
  if (result != ncclSuccess) {
    return InternalError(std::string("ncclGetVersion failed: ") + ncclGetErrorString(result));
  }
  return Version{code};
}

}  // namespace ringmaster::nccl
