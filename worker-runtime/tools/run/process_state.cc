#include "worker-runtime/tools/run/process_state.h"

#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace ringmaster::run {

char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // "pid (comm) S ...": comm may hold spaces and parentheses, so the state follows the last ')'.
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : 0;
}

bool WaitUntilStopped(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (true) {
    const char state = ProcessState(pid);
    if (state == 'T' || state == 't') return true;
    if (state == 0 || state == 'Z' || state == 'X' || std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace ringmaster::run
