#include "worker-runtime/tools/run/collective_killer.h"

#include <signal.h>

#include <thread>

#include "worker-runtime/tools/run/phase_file.h"
#include "worker-runtime/tools/run/process_state.h"

namespace ringmaster::run {

StatusOr<int64_t> KillInsideCollective(Subprocess& worker, const std::string& phase_file,
                                       std::chrono::milliseconds limit) {
  using namespace std::chrono_literals;
  const pid_t pid = worker.pid();
  const auto until = std::chrono::steady_clock::now() + limit;
  auto ended = [&] {
    return FailedPreconditionError("worker pid " + std::to_string(pid) + " ended before it was caught in a collective");
  };
  while (std::chrono::steady_clock::now() < until) {
    if (worker.Poll().has_value()) return ended();
    RINGMASTER_RETURN_IF_ERROR(worker.Signal(SIGSTOP));
    const bool stopped = WaitUntilStopped(pid, 1s);
    if (stopped) {
      StatusOr<Phase> phase = ReadPhase(phase_file);
      if (phase.ok() && phase->in_collective) {
        RINGMASTER_RETURN_IF_ERROR(worker.Signal(SIGKILL));
        return phase->step;
      }
    }
    RINGMASTER_RETURN_IF_ERROR(worker.Signal(SIGCONT));
    if (!stopped) {
      const char state = ProcessState(pid);
      if (state == 0 || state == 'Z' || state == 'X') return ended();
    }
    std::this_thread::sleep_for(1ms);
  }
  return DeadlineExceededError("worker pid " + std::to_string(pid) + " was not caught inside a collective within " +
                               std::to_string(limit.count()) + " ms (does it write its phase file " + phase_file +
                               "? see phase_file.h)");
}

}  // namespace ringmaster::run
