// A process a test starts and stops itself (an operator, a second operator replica), with its output
// in a log file the test can read and print on failure. Test support only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

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
  pid_t pid() const { return pid_; }
  std::string Log() const;  // the log file's content

 private:
  pid_t pid_ = -1;
  std::string log_file_;
};

}  // namespace ringmaster::testing
