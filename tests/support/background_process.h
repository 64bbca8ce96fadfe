// A process a test starts and stops itself (an operator, a second operator replica), with its output
// in a log file the test can read and print on failure: a thin wrapper over the one spawner,
// base/subprocess.h (own process group, clean descriptors). Test support only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/subprocess.h"

namespace ringmaster::testing {

class BackgroundProcess {
 public:
  BackgroundProcess() = default;
  ~BackgroundProcess();  // Kill()s a process still running
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Starts argv with stdout and stderr appended to `log_file`. Internal when fork/exec fails.
  Status Start(const std::vector<std::string>& argv, const std::string& log_file);
  // SIGTERM, then SIGKILL after `grace`. Returns the exit code (128+signal when killed).
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // SIGKILL at once (a crash).
  void Kill();
  bool Running();
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  std::string Log() const;  // the log file's content

 private:
  std::optional<Subprocess> process_;  // engaged from Start until Stop/Kill
  std::string log_file_;
};

}  // namespace ringmaster::testing
