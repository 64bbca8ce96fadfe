// Which NCCL the runtime was compiled against and which one it loads, and the
// fault-tolerance features each version brings (see ../shared/REFERENCE.md).
#pragma once

#include <string>

#include "base/status.h"

namespace ringmaster::nccl {

// An NCCL version as NCCL encodes it: major*10000 + minor*100 + patch (2.27.3 -> 22703).
struct Version {
  int code = 0;

  int major() const { return code / 10000; }
  int minor() const { return (code % 10000) / 100; }
  int patch() const { return code % 100; }
  std::string ToString() const;  // "2.32.3"

  // The first release where each call works (NCCL's release notes and nccl.h history; Revoke is
  // exported by 2.28.3 but first works in 2.28.7).
  bool HasCommSplit() const { return code >= 21800; }   // ncclCommSplit: 2.18.1
  bool HasCommShrink() const { return code >= 22703; }  // ncclCommShrink: 2.27.3
  bool HasCommRevoke() const { return code >= 22807; }  // ncclCommRevoke: 2.28.7
  bool HasCommGrow() const { return code >= 22902; }    // ncclCommGrow, ncclCommGetUniqueId: 2.29.2
  // NCCL_MULTI_RANK_GPU_ENABLE=1 lets two ranks share one GPU (experimental).
  bool HasMultiRankPerGpu() const { return code >= 23000; }
};

// The version of nccl.h this binary was compiled with. Never fails.
Version CompiledVersion();

// The version of the libnccl the process loaded (gpu_api.h: ncclGetVersion of nccl::Nccl()).
// Needs no GPU. Errors: as nccl::Nccl().
StatusOr<Version> LoadedVersion();

}  // namespace ringmaster::nccl
