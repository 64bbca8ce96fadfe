#include "worker-runtime/tools/run/save_killer.h"

#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "worker-runtime/tools/run/process_state.h"

namespace ringmaster::run {
namespace {

using Clock = std::chrono::steady_clock;

// The save `pid` is writing now: the name of its ".tmp-step-<step>-<pid>-*" directory in `dir`
// (leftovers of killed workers carry other pids), or "".
std::string SaveInProgress(const std::string& dir, pid_t pid) {
  std::string found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      long long step = 0, owner = 0;
      if (std::sscanf(e->d_name, ".tmp-step-%lld-%lld-", &step, &owner) == 2 && owner == pid) found = e->d_name;
    }
    ::closedir(d);
  }
  return found;
}

}  // namespace

StatusOr<std::string> KillDuringSave(Subprocess& worker, const std::string& checkpoint_dir,
                                     std::chrono::milliseconds limit) {
  using namespace std::chrono_literals;
  const pid_t pid = worker.pid();
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (SaveInProgress(checkpoint_dir, pid).empty()) {
      std::this_thread::sleep_for(100us);
      continue;
    }
    RINGMASTER_RETURN_IF_ERROR(worker.Signal(SIGSTOP));
    (void)WaitUntilStopped(pid, 1s);
    std::string save = SaveInProgress(checkpoint_dir, pid);
    if (!save.empty()) {
      RINGMASTER_RETURN_IF_ERROR(worker.Signal(SIGKILL));
      return save;
    }
    RINGMASTER_RETURN_IF_ERROR(worker.Signal(SIGCONT));
  }
  return DeadlineExceededError("no checkpoint save of pid " + std::to_string(pid) + " caught in " + checkpoint_dir +
                               " within " + std::to_string(limit.count()) +
                               " ms (do the workers save there, often enough?)");
}

}  // namespace ringmaster::run
