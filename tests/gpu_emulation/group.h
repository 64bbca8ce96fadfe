// NCCL's group semantics (group.cc, group.h): ncclGroupStart/End nest with a thread-local depth;
// everything issued inside -- collectives and send/recv (tasks) and management jobs queued by
// ncclAsyncLaunch (init, split, shrink, grow, revoke, finalize, destroy/abort's reclaim) -- runs at
// the outermost ncclGroupEnd, as one unit. Every NCCL entry point opens an implicit group of its
// own, so a call made outside any group runs at its own end, and a call made inside a user's group
// waits for that group's end: a caller who never closes the group never gets it.
//
// At the outermost end (ncclGroupEndInternal): a group of blocking communicators runs in the
// caller (groupLaunch) and returns its result; a group of non-blocking ones sets each involved
// communicator's async state to ncclInProgress, runs groupLaunch on a thread of its own and returns
// ncclInProgress; the state becomes the group's result when it ends, and the thread is joined by
// ncclCommGetAsyncError (ncclGroupJobComplete), or by an abort (ncclGroupJobAbort).
//
// Thread-safety: the group being built is per thread; a GroupJob is shared by the communicators it
// involves (joined once, by whichever gets there first).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/gpu_emulation/api_headers.h"
#include "tests/gpu_emulation/collectives.h"
#include "tests/gpu_emulation/communicator.h"

namespace gpuemu {

// One management job (ncclAsyncJob): `func` runs at the group's end; `comm` is the communicator
// whose async state it drives (and whose abort flags a failed or aborted group raises).
struct AsyncJob {
  std::function<ncclResult_t()> func;
  std::shared_ptr<CommCore> comm;
  bool destroy_flag = false;
  std::shared_ptr<Flag> abort_flag, child_abort_flag;
  ncclResult_t result = ncclSuccess;
  std::atomic<bool> done{false};
  std::thread thread;
};

struct CommTasks {
  std::shared_ptr<CommCore> comm;
  std::vector<Task> tasks;
};

// ncclGroupJob: what one outermost ncclGroupEnd launches.
struct GroupJob {
  std::vector<std::shared_ptr<AsyncJob>> jobs;
  std::vector<CommTasks> colls;
  bool blocking = true;
  std::atomic<bool> abort{false};
  std::atomic<bool> done{false};
  ncclResult_t result = ncclSuccess;
  std::thread thread;
  std::mutex join_mu;
  bool joined = false;
  ~GroupJob();
};

ncclResult_t GroupStartInternal();
ncclResult_t GroupEndInternal();
// as ncclGroupErrCheck: inside a group, an error is remembered and fails the whole group.
ncclResult_t GroupErrCheck(ncclResult_t ret);
int GroupDepth();

// as ncclAsyncLaunch: at depth 0 the job runs now; else it is queued for the group's end.
ncclResult_t AsyncLaunch(std::function<ncclResult_t()> func, const std::shared_ptr<CommCore>& comm);
// as taskAppend + ncclGroupCommJoin: a collective or send/recv of `comm` for the group's end.
void GroupAppendTask(const std::shared_ptr<CommCore>& comm, Task task);

// as ncclGroupJobComplete / ncclGroupJobAbort: join the group's thread (once) and release it.
void GroupJobComplete(GroupJob& job);
void GroupJobAbort(GroupJob& job);

}  // namespace gpuemu
