#include "tests/pod_runner/local_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::testing {

namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

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
  return Subprocess::Start(options);
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
