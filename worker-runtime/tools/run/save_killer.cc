#include "worker-runtime/tools/run/save_killer.h"

#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

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

// Whether `pid` is stopped (state T in /proc/PID/stat).
bool Stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && (stat[paren + 2] == 'T' || stat[paren + 2] == 't');
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
    for (int i = 0; i < 10000 && !Stopped(pid); ++i) std::this_thread::sleep_for(100us);
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
