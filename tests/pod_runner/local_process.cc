#include "pod_runner/local_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::testing {

namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

void WriteStderr(const char* msg) { (void)!::write(STDERR_FILENO, msg, std::strlen(msg)); }

}  // namespace

StatusOr<pid_t> SpawnLocalProcess(const LocalProcessSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("SpawnLocalProcess: empty argv");
  // Everything the child needs is prepared before fork.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<std::string> argv = spec.argv;
  std::vector<char*> envp, args;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  int log_fd = ::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return InternalError(ErrnoText("open " + spec.log_file));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return InternalError(ErrnoText("fork"));
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::setpgid(0, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    if (::chdir(spec.cwd.c_str()) != 0) {
      WriteStderr("local process: cannot chdir to its working directory\n");
      ::_exit(128);
    }
    // Sockets and files of the test process stay out.
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
      for (int fd = 3; fd < 4096; ++fd) ::close(fd);
    }
    ::execve(spec.binary.c_str(), args.data(), envp.data());
    WriteStderr("local process: exec failed\n");
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no window in which a kill of the group misses it
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  return pid;
}

Status WriteFileWithMode(const std::string& path, const std::string& content, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return InternalError(ErrnoText("open " + path));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return InternalError(ErrnoText("write " + path));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status::Ok();
}

}  // namespace ringmaster::testing
