#include "worker-runtime/tools/launch/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/membership.h"
#include "worker-runtime/tools/launch/output_relay.h"

namespace ringmaster::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After the last process ended, how long its output may still arrive (a process it left behind holding
// the pipe); what its processes wrote before they ended is read at once.
constexpr milliseconds kDrainAfterExit{1000};
// The longest poll: SIGCHLD wakes the loop, this is only a backstop.
constexpr milliseconds kLongestWait{1000};

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig);
}

void Log(const std::string& line) { WriteAll(STDERR_FILENO, std::string(kProgram) + ": " + line + "\n"); }

// The signals the loop handles, read from a signalfd while they are blocked. Restores the mask when
// destroyed.
class SignalFd {
 public:
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  SignalFd() = default;
  ~SignalFd() {
    if (fd_ >= 0) ::close(fd_);
    if (blocked_) ::sigprocmask(SIG_SETMASK, &old_, nullptr);
  }

  Status Open(std::initializer_list<int> signals) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : signals) sigaddset(&set, sig);
    if (::sigprocmask(SIG_BLOCK, &set, &old_) != 0) {
      return InternalError(std::string("sigprocmask: ") + std::strerror(errno));
    }
    blocked_ = true;
    fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd_ < 0) return InternalError(std::string("signalfd: ") + std::strerror(errno));
    return Status::Ok();
  }

  int fd() const { return fd_; }

  // Every signal pending now, in order.
  std::vector<int> Read() {
    std::vector<int> out;
    signalfd_siginfo info;
    while (true) {
      const ssize_t n = ::read(fd_, &info, sizeof(info));
      if (n == static_cast<ssize_t>(sizeof(info)))
        out.push_back(static_cast<int>(info.ssi_signo));
      else if (n < 0 && errno == EINTR)
        continue;
      else
        break;
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool blocked_ = false;
  sigset_t old_{};
};

struct Process {
  int index = 0;
  std::string id;  // api::WorkerId(pod, index)
  Subprocess sub;
  bool reported = false;  // its end handled (OnExit)
};

class Supervisor {
 public:
  Supervisor(const LaunchOptions& options, const PodEnvironment& pod) : o_(options), pod_(pod) {}

  int Run() {
    if (Status s = signals_.Open({SIGCHLD, SIGTERM, SIGINT}); !s.ok()) {
      Log("cannot take signals: " + s.message());
      return 1;
    }
    ::signal(SIGPIPE, SIG_IGN);          // a reader of our output that goes away: drop the output, keep supervising
    ::signal(SIGCHLD, SIG_DFL);          // an ignored SIGCHLD (inherited through exec) would reap our processes for us
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of our processes are ours to reap, PID 1 or not
    const int k = o_.processes;
    Log("starting " + std::to_string(k) + " processes of pod " + pod_.pod + " (store ports " +
        std::to_string(api::ProcessPort(pod_.store_port, 0)) + ".." +
        std::to_string(api::ProcessPort(pod_.store_port, k - 1)) + ", devices 0.." + std::to_string(k - 1) + ")");
    StartAll();
    Supervise();
    Drain();
    return exit_code_.value_or(0);
  }

 private:
  void StartAll() {
    processes_.reserve(static_cast<size_t>(o_.processes));
    for (int i = 0; i < o_.processes; ++i) {
      // A signal taken while starting: the rest are not started, the started ones got it.
      if (HandleSignals(); stopping()) {
        if (processes_.empty() && signal_taken_) exit_code_ = 128 + *signal_taken_;
        return;
      }
      const std::string id = api::WorkerId(pod_.pod, i);
      auto sub = StartProcess(o_.command, ProcessEnvironment(pod_, i, o_.processes));
      if (!sub.ok()) {
        exit_code_ = exit_code_.value_or(1);
        Stop("cannot start process " + std::to_string(i) + " (" + id + "): " + sub.status().message());
        return;
      }
      const std::string prefix = "[" + std::to_string(i) + "] ";
      relay_.Add(sub->TakeStdout(), STDOUT_FILENO, prefix);
      relay_.Add(sub->TakeStderr(), STDERR_FILENO, prefix);
      processes_.push_back(Process{i, id, std::move(sub).value()});
    }
  }

  void Supervise() {
    std::vector<pollfd> fds;
    while (true) {
      Reap();
      if (!AnyRunning()) return;
      milliseconds wait = kLongestWait;
      if (kill_at_ && !killed_) {
        const auto now = Clock::now();
        if (now >= *kill_at_) {
          KillRemaining();
          continue;
        }
        wait = std::min(wait, std::chrono::ceil<milliseconds>(*kill_at_ - now));
      }
      fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
      relay_.AppendPollFds(fds);
      if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) < 0 && errno != EINTR) {
        Log(std::string("poll: ") + std::strerror(errno));
        return;  // cannot happen with valid descriptors; the processes die with us (parent-death signal)
      }
      HandleSignals();
      relay_.Pump();
    }
  }

  // The processes have all ended: what they wrote is in the pipes; a process they left behind may hold a
  // pipe open, and gets kDrainAfterExit.
  void Drain() {
    const auto deadline = Clock::now() + kDrainAfterExit;
    std::vector<pollfd> fds;
    while (true) {
      relay_.Pump();
      Reap();  // orphans
      const auto now = Clock::now();
      if (!relay_.open() || now >= deadline) break;
      fds.clear();
      relay_.AppendPollFds(fds);
      (void)::poll(fds.data(), fds.size(), static_cast<int>(std::chrono::ceil<milliseconds>(deadline - now).count()));
    }
    relay_.CloseAll();
  }

  void HandleSignals() {
    for (int sig : signals_.Read()) {
      if (sig != SIGTERM && sig != SIGINT) continue;  // SIGCHLD: Reap() runs next
      signal_taken_ = sig;
      int running = 0;
      for (Process& p : processes_) {
        if (p.sub.running() && p.sub.Signal(sig).ok()) ++running;
      }
      Log("got " + SignalName(sig) + ": passed it to the pod's " + std::to_string(running) + " running processes" +
          (stopping() ? "" : "; SIGKILL to those still running after " + std::to_string(o_.grace.count()) + " s"));
      if (!stopping()) kill_at_ = Clock::now() + o_.grace;
    }
  }

  // Reaps every process that has ended, ours or an orphan's, and handles the end of each of ours.
  // waitid(WNOWAIT) peeks, so a process of ours is reaped by its Subprocess (which keeps its exit status).
  void Reap() {
    ReapChildren();
    // Also the processes reaped elsewhere: Subprocess::Signal reaps one that has just ended.
    for (bool again = true; again;) {
      again = false;
      for (Process& p : processes_) {
        if (p.reported || p.sub.running()) continue;
        p.reported = true;
        OnExit(p, p.sub.exit_status().value_or(ExitStatus{-1, 0}));
        again = true;  // OnExit may have signalled (and so reaped) others
      }
    }
  }

  void ReapChildren() {
    while (true) {
      siginfo_t info{};
      if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno == EINTR) continue;
        return;  // ECHILD: no child left
      }
      if (info.si_pid == 0) return;  // none has ended
      Process* ours = nullptr;
      for (Process& p : processes_) {
        if (p.sub.running() && p.sub.pid() == info.si_pid) ours = &p;
      }
      if (ours == nullptr) {
        int status = 0;
        while (::waitpid(info.si_pid, &status, WNOHANG) < 0 && errno == EINTR) {}
        continue;
      }
      if (!ours->sub.Poll()) return;  // cannot happen: waitid said it ended
    }
  }

  void OnExit(const Process& p, const ExitStatus& e) {
    const int code = e.ShellCode();
    std::string line = "process " + std::to_string(p.index) + " (" + p.id + ") " +
                       (e.exited() ? "exited with code " + std::to_string(e.code)
                                   : "was killed by " + SignalName(e.signal) + " (code " + std::to_string(code) + ")");
    if (code != 0 && !exit_code_) exit_code_ = code;
    if (code != 0 && !stopping()) {
      Stop(line);
    } else {
      Log(line);
    }
  }

  // Stops the pod: `why`, then SIGTERM to every running process and SIGKILL after the grace.
  void Stop(const std::string& why) {
    Log(why + ": stopping the pod's other processes");
    for (Process& p : processes_) {
      if (p.sub.running()) (void)p.sub.Signal(SIGTERM);
    }
    kill_at_ = Clock::now() + o_.grace;
  }

  void KillRemaining() {
    for (Process& p : processes_) {
      if (!p.sub.running()) continue;
      Log("process " + std::to_string(p.index) + " (" + p.id + ") still runs " + std::to_string(o_.grace.count()) +
          " s after it was asked to stop: sending SIGKILL");
      (void)p.sub.Signal(SIGKILL);
    }
    killed_ = true;
  }

  bool stopping() const { return kill_at_.has_value(); }

  bool AnyRunning() const {
    return std::any_of(processes_.begin(), processes_.end(), [](const Process& p) { return p.sub.running(); });
  }

  const LaunchOptions& o_;
  const PodEnvironment& pod_;
  SignalFd signals_;
  OutputRelay relay_;
  std::vector<Process> processes_;
  std::optional<int> exit_code_;              // the first non-zero code of a process
  std::optional<Clock::time_point> kill_at_;  // set once the pod stops: when the survivors get SIGKILL
  bool killed_ = false;
  std::optional<int> signal_taken_;  // the last SIGTERM or SIGINT the launcher got
};

}  // namespace

int RunPod(const LaunchOptions& options, const PodEnvironment& pod) { return Supervisor(options, pod).Run(); }

}  // namespace ringmaster::launch
