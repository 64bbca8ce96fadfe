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

  bool HasCommSplit() const { return code >= 21800; }   // ncclCommSplit
  bool HasCommShrink() const { return code >= 22700; }  // ncclCommShrink
  bool HasCommRevoke() const { return code >= 22800; }  // ncclCommRevoke
  bool HasCommGrow() const { return code >= 22900; }    // ncclCommGrow
  // NCCL_MULTI_RANK_GPU_ENABLE=1 lets two ranks share one GPU (experimental).
  bool HasMultiRankPerGpu() const { return code >= 23000; }
};

// The version of nccl.h this binary was compiled with. Never fails.
Version CompiledVersion();

// The version of the libnccl the process loaded (ncclGetVersion). Needs no GPU.
// Errors: Internal when NCCL reports a failure.
StatusOr<Version> LoadedVersion();

}  // namespace ringmaster::nccl
