#include "tests/pod_runner/local_process.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::testing {

namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// In the child (async-signal-safe calls only): joins the network namespace open as `fd`, or writes
// "pod setup failed: setns network namespace: REASON" on its stderr (the log) and exits 128.
void JoinNetworkNamespace(int fd) {
  if (::setns(fd, CLONE_NEWNET) == 0) return;
  const char* reason = strerrordesc_np(errno);
  for (const char* part : {"pod setup failed: setns network namespace: ", reason ? reason : "unknown error", "\n"}) {
    (void)!::write(STDERR_FILENO, part, std::strlen(part));
  }
  ::_exit(128);
}

}  // namespace

StatusOr<Subprocess> SpawnLocalProcess(const LocalProcessSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("SpawnLocalProcess: empty argv");
  SpawnOptions options;
  options.program = spec.binary;
  options.argv = spec.argv;
  options.inherit_environment = false;
  options.env = spec.env;
  options.cwd = spec.cwd;
  options.in = Redirect::Null();
  options.out = options.err = Redirect::AppendTo(spec.log_file);
  options.own_process_group = true;
  if (spec.network_namespace.empty()) return Subprocess::Start(options);
  // Opened before fork (close-on-exec), joined by the child before exec.
  const int fd = ::open(spec.network_namespace.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InternalError(ErrnoText("open network namespace " + spec.network_namespace));
  options.before_exec = [fd] { JoinNetworkNamespace(fd); };
  StatusOr<Subprocess> started = Subprocess::Start(options);
  ::close(fd);
  return started;
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
