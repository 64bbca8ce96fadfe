#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace ringmaster::testing {
namespace {

std::string ErrnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Pipes are [read, write]; closes whichever ends are still open.
struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void Close(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                   const std::string& input) {
  if (argv.empty()) return InvalidArgumentError("RunCommand: empty argv");
  // A child that exits before reading its input must not kill the test with SIGPIPE.
  static const bool kSigpipeIgnored = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)kSigpipeIgnored;
  Pipe in, out, err;
  if (pipe2(in.fd, O_CLOEXEC) != 0 || pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0) {
    return InternalError(ErrnoText("pipe2"));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return InternalError(ErrnoText("fork"));
  if (pid == 0) {
    dup2(in.fd[0], STDIN_FILENO);
    dup2(out.fd[1], STDOUT_FILENO);
    dup2(err.fd[1], STDERR_FILENO);
    setpgid(0, 0);  // own process group, so a timeout kills its children too
    execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  in.Close(0);
  out.Close(1);
  err.Close(1);

  CommandResult result;
  size_t written = 0;
  if (input.empty()) in.Close(1);
  else fcntl(in.fd[1], F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  char buf[65536];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[3] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}, {in.fd[1], POLLOUT, 0}};
    int n = poll(fds, 3, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(r));
      else if (r == 0 || errno != EINTR) (i == 0 ? out : err).Close(0);
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(in.fd[1], input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 || written == input.size()) in.Close(1);
    }
  }
  if (timed_out) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    return DeadlineExceededError("command timed out after " + std::to_string(timeout.count()) + " ms: " + cmd +
                                 "\nstderr: " + result.err);
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

::testing::AssertionResult CommandSucceeded(const char* expression, const StatusOr<CommandResult>& result) {
  if (!result.ok()) return ::testing::AssertionFailure() << expression << " did not run: " << result.status();
  return CommandSucceeded(expression, *result);
}

::testing::AssertionResult CommandSucceeded(const char* expression, const CommandResult& result) {
  if (result.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expression << " exited " << result.exit_code << "; stderr:\n" << result.err;
}

}  // namespace ringmaster::testing
