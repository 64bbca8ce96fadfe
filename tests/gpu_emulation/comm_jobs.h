// The bodies of NCCL's management jobs (what ncclAsyncLaunch queues; init.cc), run at the end of
// their group -- in the caller for blocking communicators, on the group's thread otherwise.
//
//   InitRankJob   ncclCommInitRankFunc for ncclCommInitRank* and ncclCommGrow: bootstrap through
//                 the root, the duplicate-GPU check, the mesh; *newcomm (grow) written at its end,
//                 from this thread.
//   ChildJob      ncclCommInitRankFunc for ncclCommSplit / ncclCommShrink: the (color, key)
//                 exchange (split), then the child's mesh built through the parent's (a shrink
//                 never talks to the excluded ranks); *newcomm written at its end.
//   RevokeJob     commRevokeAsync: waits for the in-flight work to end, then lowers the abort flags.
//   DestroySyncJob commDestroySync (ncclCommFinalize): waits for the queued work to finish.
//   ReclaimJob    commReclaim (ncclCommDestroy/ncclCommAbort): tears the rank down and frees it.
//
// RINGMASTER_EMULATED_NCCL_LATENCY_MS delays the end of the first four (settings.h).
#pragma once

#include <memory>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/bootstrap.h"
#include "tests/gpu_emulation/communicator.h"

namespace gpuemu {

struct InitJobArgs {
  std::shared_ptr<CommCore> comm;
  ncclComm* handle = nullptr;
  IdHandle id;  // unless the id comes from the parent (below)
  bool has_id = true;
  std::shared_ptr<CommCore> parent;  // grow, existing rank: the communicator it grows
  uint64_t grow_tag = 0;             // where the parent's mesh brings the grow id
  ncclComm** newcomm = nullptr;      // grow: written again at the end
  bool grow = false;
};
ncclResult_t InitRankJob(const InitJobArgs& a);

struct ChildJobArgs {
  std::shared_ptr<CommCore> parent;
  std::shared_ptr<CommCore> child;  // null: NCCL_SPLIT_NOCOLOR
  ncclComm* child_handle = nullptr;
  ncclComm** newcomm = nullptr;
  bool shrink = false;
  int color = 0;
  int key = 0;
  std::vector<int> excluded;  // sorted
  uint64_t tag = 0;           // this child's exchanges on the parent's mesh
};
ncclResult_t ChildJob(const ChildJobArgs& a);

ncclResult_t RevokeJob(const std::shared_ptr<CommCore>& comm);
ncclResult_t DestroySyncJob(const std::shared_ptr<CommCore>& comm);
ncclResult_t ReclaimJob(ncclComm* handle);

}  // namespace gpuemu
