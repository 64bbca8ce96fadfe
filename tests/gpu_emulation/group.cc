#include "tests/gpu_emulation/group.h"

#include <chrono>

#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/log.h"

namespace gpuemu {
namespace {

// The group being built by this thread (group.cc's thread-locals).
thread_local int group_depth = 0;
thread_local ncclResult_t group_error = ncclSuccess;
thread_local int group_blocking = -1;

std::vector<std::shared_ptr<AsyncJob>>& Jobs() {
  thread_local std::vector<std::shared_ptr<AsyncJob>> jobs;
  return jobs;
}

std::vector<CommTasks>& Colls() {
  thread_local std::vector<CommTasks> colls;
  return colls;
}

void ResetLocalState() {  // as groupLocalResetJobState
  group_error = ncclSuccess;
  group_blocking = -1;
  Jobs().clear();
  Colls().clear();
}

// as groupCleanup: a failed group's communicators take its error (non-blocking ones).
void Cleanup(GroupJob& g, ncclResult_t error) {
  for (auto& c : g.colls) {
    if (!c.comm->blocking) SetAsyncError(*c.comm, error);
  }
  for (auto& job : g.jobs) {
    if (!job->destroy_flag && job->comm && !job->comm->blocking) SetAsyncError(*job->comm, error);
  }
}

void RaiseJobAbortFlags(AsyncJob& job) {
  if (job.abort_flag) job.abort_flag->store(1);
  if (job.child_abort_flag) job.child_abort_flag->store(1);
}

// as asyncJobLaunch: one job runs in this thread; several run on threads of their own (so inits of
// several ranks in one group can meet), and a failure or an abort of the group raises the others'
// abort flags.
ncclResult_t RunJobs(GroupJob& g) {
  if (g.jobs.empty()) return ncclSuccess;
  if (g.jobs.size() == 1) {
    AsyncJob& job = *g.jobs[0];
    job.result = job.func();
    job.done.store(true);
    return job.result;
  }
  for (auto& job : g.jobs) {
    AsyncJob* raw = job.get();
    job->thread = std::thread([raw] {
      raw->result = raw->func();
      raw->done.store(true);
    });
  }
  ncclResult_t ret = ncclSuccess;
  bool abort_others = false;
  for (;;) {
    bool all_done = true;
    for (auto& job : g.jobs) {
      if (job->thread.joinable() && job->done.load()) {
        job->thread.join();
        if (job->result != ncclSuccess && ret == ncclSuccess) {
          ret = job->result;
          abort_others = true;
        }
      }
      if (job->thread.joinable()) all_done = false;
      if (!job->destroy_flag && (g.abort.load() || abort_others)) RaiseJobAbortFlags(*job);
    }
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return ret;
}

// as groupLaunch: the management jobs, then the launch of the collectives, then the async states.
ncclResult_t GroupLaunch(GroupJob& g) {
  ncclResult_t ret = RunJobs(g);
  if (ret == ncclSuccess) {
    for (auto& c : g.colls) {
      SetCurrentDevice(c.comm->cuda_dev);
      ret = LaunchTasks(c.comm, std::move(c.tasks));
      if (ret != ncclSuccess) break;
    }
  }
  if (ret != ncclSuccess) {
    Cleanup(g, ret);
    return ret;
  }
  for (auto& job : g.jobs) {
    if (!job->destroy_flag && job->comm && !job->comm->blocking && g.colls.empty()) SetAsyncError(*job->comm, ret);
  }
  for (auto& c : g.colls) {
    if (!c.comm->blocking) SetAsyncError(*c.comm, ret);
  }
  return ret;
}

void Link(const std::shared_ptr<CommCore>& comm, const std::shared_ptr<GroupJob>& g) {
  std::lock_guard<std::mutex> lock(comm->mu);
  for (auto& linked : comm->group_jobs) {
    if (linked == g) return;
  }
  comm->group_jobs.push_back(g);
}

void Join(GroupJob& g) {
  std::lock_guard<std::mutex> lock(g.join_mu);
  if (g.joined) return;
  if (g.thread.joinable()) g.thread.join();
  g.joined = true;
  // the jobs and tasks hold their communicators: let them go (a communicator holds this group job)
  g.jobs.clear();
  g.colls.clear();
}

}  // namespace

GroupJob::~GroupJob() {
  if (thread.joinable()) thread.join();
}

int GroupDepth() { return group_depth; }

ncclResult_t GroupStartInternal() {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t GroupErrCheck(ncclResult_t ret) {
  if (group_depth > 0 && ret != ncclSuccess && ret != ncclInProgress) group_error = ret;
  return ret;
}

ncclResult_t AsyncLaunch(std::function<ncclResult_t()> func, const std::shared_ptr<CommCore>& comm) {
  if (group_depth == 0) return func();
  auto job = std::make_shared<AsyncJob>();
  job->destroy_flag = comm->destroy_flag.load();
  job->func = std::move(func);
  job->comm = comm;
  job->abort_flag = comm->abort_flag;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    job->child_abort_flag = comm->child_abort_flag;
  }
  // blocking and non-blocking communicators may not share a group (a teardown counts as blocking)
  if (comm->destroy_flag.load()) {
    group_blocking = 1;
  } else if (group_blocking == -1) {
    group_blocking = comm->blocking ? 1 : 0;
  } else if (group_blocking != (comm->blocking ? 1 : 0)) {
    Warn(comm->cuda_dev, "Blocking and nonblocking communicators are not allowed in the same group.");
    return ncclInvalidArgument;
  }
  Jobs().push_back(std::move(job));
  return ncclSuccess;
}

void GroupAppendTask(const std::shared_ptr<CommCore>& comm, Task task) {
  auto& colls = Colls();
  for (auto& c : colls) {
    if (c.comm == comm) {
      c.tasks.push_back(std::move(task));
      return;
    }
  }
  group_blocking = comm->blocking ? 1 : 0;  // as ncclGroupCommJoin
  colls.push_back(CommTasks{comm, {std::move(task)}});
}

ncclResult_t GroupEndInternal() {
  if (group_depth == 0) {
    Warn(-1, "ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  if (--group_depth > 0) return ncclSuccess;
  auto g = std::make_shared<GroupJob>();
  g->jobs.swap(Jobs());
  g->colls.swap(Colls());
  ncclResult_t ret = group_error;
  if (ret != ncclSuccess) {
    Cleanup(*g, ret);
    ResetLocalState();
    return ret;
  }
  if (!g->jobs.empty() || !g->colls.empty()) {
    g->blocking = group_blocking != 0;
    if (!g->blocking) {
      // a non-blocking group: the communicators are ncclInProgress until its thread ends
      for (auto& job : g->jobs) {
        SetAsyncError(*job->comm, ncclInProgress);
        Link(job->comm, g);
      }
      for (auto& c : g->colls) {
        SetAsyncError(*c.comm, ncclInProgress);
        Link(c.comm, g);
      }
      GroupJob* raw = g.get();
      g->thread = std::thread([raw] {
        raw->result = GroupLaunch(*raw);
        raw->done.store(true);
      });
      ret = ncclInProgress;
    } else {
      const int saved = CurrentDevice();
      ret = GroupLaunch(*g);
      SetCurrentDevice(saved);
      g->done.store(true);
    }
  }
  ResetLocalState();
  return ret;
}

void GroupJobComplete(GroupJob& job) { Join(job); }

void GroupJobAbort(GroupJob& job) {
  job.abort.store(true);
  Join(job);
}

}  // namespace gpuemu
