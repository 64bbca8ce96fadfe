#include "base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/environment.h"

namespace ringmaster {
namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

ExitStatus FromWaitStatus(int status) {
  ExitStatus e;
  if (WIFEXITED(status))
    e.code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    e.signal = WTERMSIG(status);
  return e;
}

// The child's environment as NAME=VALUE strings: the inherited one (when asked) with `env` applied.
std::vector<std::string> ChildEnvironment(const SpawnOptions& o) {
  std::vector<std::string> out;
  if (o.inherit_environment) {
    for (char** e = ProcessEnvironment(); *e != nullptr; ++e) out.emplace_back(*e);
  }
  for (const auto& [name, value] : o.env) {
    const std::string prefix = name + "=";
    out.erase(std::remove_if(out.begin(), out.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; }),
              out.end());
    out.push_back(prefix + value);
  }
  return out;
}

// The file to execute: `program`, argv[0] when it holds a '/', else the first executable match in the
// child's PATH (the parent's when the child has none). A name found nowhere is returned as is: its exec
// fails in the child, which exits 127 as a shell's would.
std::string ResolveProgram(const SpawnOptions& o, const std::vector<std::string>& env) {
  if (!o.program.empty()) return o.program;
  const std::string& name = o.argv[0];
  if (name.find('/') != std::string::npos) return name;
  const char* parent_path = std::getenv("PATH");
  std::string path = parent_path ? parent_path : "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    begin = end + 1;
  }
  return name;
}

// Opens the parent's side of one redirect: `child_fd` gets what the child's stream is dup2'ed from (-1:
// inherit), `parent_fd` our end of a pipe. Every descriptor is close-on-exec.
Status OpenRedirect(const Redirect& r, bool child_reads, int* child_fd, int* parent_fd) {
  switch (r.kind) {
    case Redirect::Kind::kInherit: return Status::Ok();
    case Redirect::Kind::kNull:
      *child_fd = ::open("/dev/null", (child_reads ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (*child_fd < 0) return InternalError(ErrnoText("open /dev/null"));
      return Status::Ok();
    case Redirect::Kind::kAppendToFile:
      *child_fd = ::open(r.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (*child_fd < 0) return InternalError(ErrnoText("open " + r.path));
      return Status::Ok();
    case Redirect::Kind::kPipe: {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) return InternalError(ErrnoText("pipe2"));
      *child_fd = child_reads ? fds[0] : fds[1];
      *parent_fd = child_reads ? fds[1] : fds[0];
      return Status::Ok();
    }
  }
  return InvalidArgumentError("unknown redirect");
}

void WriteStderr(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

// Everything the child needs, prepared before fork: it then makes only async-signal-safe calls.
struct ChildPlan {
  std::string program;
  std::vector<std::string> candidates;  // tried in order with execve (a PATH search inside a root)
  std::vector<std::string> argv_strings, env_strings;
  std::vector<char*> argv, envp;
  std::string cwd;
  std::string exec_failed;    // "exec failed: PROGRAM: "
  int fds[3] = {-1, -1, -1};  // stdin, stdout, stderr of the child; -1: inherited
  bool own_group = true;
  int parent_death_signal = 0;
  pid_t parent = 0;  // the parent's pid, to tell whether it died before the death signal was armed
  const std::function<void()>* before_exec = nullptr;  // SpawnOptions::before_exec, when set
};

[[noreturn]] void ExecChild(const ChildPlan& plan) {
  if (plan.own_group) ::setpgid(0, 0);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (plan.parent_death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, plan.parent_death_signal);
    if (::getppid() != plan.parent) {  // the parent died before the signal was armed: it will never come
      ::raise(plan.parent_death_signal);
      ::_exit(128 + plan.parent_death_signal);
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (plan.fds[i] >= 0) ::dup2(plan.fds[i], i);  // the copy at i is not close-on-exec
  }
  if (plan.before_exec) (*plan.before_exec)();
  if (!plan.cwd.empty() && ::chdir(plan.cwd.c_str()) != 0) {
    WriteStderr("cannot chdir to the working directory\n");
    ::_exit(128);
  }
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {  // the parent's sockets and files stay out
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
  }
  // execvp's rule: a candidate that is missing is skipped; EACCES is kept if nothing else runs.
  int error = ENOENT;
  bool denied = false;
  for (const std::string& candidate : plan.candidates) {
    ::execve(candidate.c_str(), plan.argv.data(), plan.envp.data());
    error = errno;
    if (error == EACCES)
      denied = true;
    else if (error != ENOENT && error != ENOTDIR)
      break;
  }
  if (denied && (error == ENOENT || error == ENOTDIR)) error = EACCES;
  const char* reason = strerrordesc_np(error);
  WriteStderr(plan.exec_failed.c_str());
  WriteStderr(reason ? reason : "unknown error");
  WriteStderr("\n");
  ::_exit(127);
}

// write(2) on a pipe whose reader may be gone, without SIGPIPE: the signal is blocked in this thread for
// the call and a pending one taken before it is unblocked.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  ssize_t n = ::write(fd, data, size);
  int saved = errno;
  if (n < 0 && saved == EPIPE) {
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {}
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}

// `name` in each directory of the child's PATH (a shell's default when it has none), for a lookup the child
// makes when it execs (SpawnOptions::lookup_program_in_child: e.g. inside a root only the child sees).
std::vector<std::string> PathCandidates(const std::string& name, const std::vector<std::string>& env) {
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(begin, end - begin);
    out.push_back((dir.empty() ? "." : dir) + "/" + name);
    begin = end + 1;
  }
  return out;
}

}  // namespace

std::string ExitStatus::ToString() const {
  return signal == 0 ? "exited " + std::to_string(code) : "killed by signal " + std::to_string(signal);
}

StatusOr<Subprocess> Subprocess::Start(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgumentError("Subprocess::Start: empty argv");
  ChildPlan plan;
  plan.env_strings = ChildEnvironment(options);
  plan.program = ResolveProgram(options, plan.env_strings);
  plan.argv_strings = options.argv;
  for (auto& a : plan.argv_strings) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (auto& e : plan.env_strings) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.cwd = options.cwd;
  plan.candidates = {plan.program};
  plan.own_group = options.own_process_group;
  plan.parent_death_signal = options.parent_death_signal;
  plan.parent = ::getpid();
  if (options.before_exec) plan.before_exec = &options.before_exec;
  if (options.lookup_program_in_child && options.program.empty() && options.argv[0].find('/') == std::string::npos) {
    plan.program = options.argv[0];
    plan.candidates = PathCandidates(options.argv[0], plan.env_strings);
  }
  plan.exec_failed = "exec failed: " + plan.program + (plan.candidates.size() > 1 ? " (searched PATH)" : "") + ": ";

  Subprocess p;
  p.own_group_ = options.own_process_group;
  auto close_child_ends = [&plan] {
    for (int& fd : plan.fds) CloseFd(fd);
  };
  const Redirect* redirects[3] = {&options.in, &options.out, &options.err};
  int* parent_ends[3] = {&p.stdin_fd_, &p.stdout_fd_, &p.stderr_fd_};
  for (int i = 0; i < 3; ++i) {
    Status s = OpenRedirect(*redirects[i], i == 0, &plan.fds[i], parent_ends[i]);
    if (!s.ok()) {
      close_child_ends();
      return s;  // p's destructor closes the parent's ends
    }
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    close_child_ends();
    return InternalError(ErrnoText("fork"));
  }
  if (pid == 0) ExecChild(plan);
  if (options.own_process_group) ::setpgid(pid, pid);  // also here: no window in which a group kill misses it
  close_child_ends();
  p.pid_ = pid;
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this == &other) return *this;
  if (pid_ > 0 && running()) Kill();
  CloseFds();
  pid_ = std::exchange(other.pid_, -1);
  own_group_ = other.own_group_;
  exit_ = std::exchange(other.exit_, std::nullopt);
  stdin_fd_ = std::exchange(other.stdin_fd_, -1);
  stdout_fd_ = std::exchange(other.stdout_fd_, -1);
  stderr_fd_ = std::exchange(other.stderr_fd_, -1);
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && running()) Kill();
  CloseFds();
}

void Subprocess::CloseFds() {
  CloseFd(stdin_fd_);
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

std::optional<ExitStatus> Subprocess::Poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {}
  if (r == pid_)
    exit_ = FromWaitStatus(status);
  else if (r < 0)
    exit_ = ExitStatus{-1, 0};  // not our child any more (ECHILD): nothing left to wait for
  return exit_;
}

StatusOr<ExitStatus> Subprocess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    if (auto e = Poll()) return *e;
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("pid " + std::to_string(pid_) + " still runs after " +
                                   std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

ExitStatus Subprocess::Wait() {
  if (exit_ || pid_ <= 0) return exit_.value_or(ExitStatus{-1, 0});
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {}
  exit_ = r == pid_ ? FromWaitStatus(status) : ExitStatus{-1, 0};
  return *exit_;
}

Status Subprocess::Signal(int sig) {
  if (pid_ <= 0 || Poll()) return FailedPreconditionError("process " + std::to_string(pid_) + " has ended");
  if (::kill(pid_, sig) != 0) return InternalError(ErrnoText("kill " + std::to_string(pid_)));
  return Status::Ok();
}

Status Subprocess::SignalGroup(int sig) {
  if (!own_group_) return Signal(sig);
  if (pid_ <= 0 || exit_) return FailedPreconditionError("process " + std::to_string(pid_) + " has ended");
  // Not reaped yet, so the group id is still this process's (it may be a zombie whose children live on).
  if (::kill(-pid_, sig) != 0 && errno != ESRCH) return InternalError(ErrnoText("kill -" + std::to_string(pid_)));
  return Status::Ok();
}

ExitStatus Subprocess::Kill() {
  if (pid_ > 0 && !exit_) {
    (void)SignalGroup(SIGKILL);
    Wait();
  }
  return exit_.value_or(ExitStatus{-1, 0});
}

ExitStatus Subprocess::Terminate(std::chrono::milliseconds grace) {
  if (pid_ <= 0 || exit_) return exit_.value_or(ExitStatus{-1, 0});
  (void)SignalGroup(SIGTERM);
  auto waited = Wait(grace);
  return waited.ok() ? *waited : Kill();
}

Subprocess::Output Subprocess::Communicate(const std::string& input, std::chrono::steady_clock::time_point deadline) {
  Output result;
  size_t written = 0;
  if (input.empty())
    CloseFd(stdin_fd_);
  else if (stdin_fd_ >= 0)
    ::fcntl(stdin_fd_, F_SETFL, O_NONBLOCK);
  char buf[65536];
  while (stdout_fd_ >= 0 || stderr_fd_ >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[3] = {{stdout_fd_, POLLIN, 0}, {stderr_fd_, POLLIN, 0}, {stdin_fd_, POLLOUT, 0}};
    int n = ::poll(fds, 3, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      if (r > 0)
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(r));
      else if (r == 0 || errno != EINTR)
        CloseFd(i == 0 ? stdout_fd_ : stderr_fd_);
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = WriteWithoutSigpipe(stdin_fd_, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) CloseFd(stdin_fd_);
    }
  }
  CloseFd(stdin_fd_);
  return result;
}

}  // namespace ringmaster
