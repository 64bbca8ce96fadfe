// Starting a container's command as a local process, the way a container starts: only the environment it
// is given, default signal dispositions and nothing blocked (whatever the test process set), its own
// process group (so a kill reaches its children), no inherited descriptors, stdin from /dev/null and
// stdout+stderr appended to a log file. Used by the pod runner (pod_runner.h); a thin wrapper over
// base/subprocess.h. Test support only.
// Thread-safe (fork from a multithreaded process: the child makes only async-signal-safe calls).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"
#include "base/subprocess.h"
#include "tests/pod_runner/container_env.h"

namespace ringmaster::testing {

struct LocalProcessSpec {
  std::string binary;             // absolute path, executed as is
  std::vector<std::string> argv;  // argv[0] included
  EnvList env;                    // the whole environment
  std::string cwd;
  std::string log_file;  // appended to
};

// Returns the process (its pid is also its process group id). Internal when the log file cannot be opened or
// fork fails. A child that cannot chdir exits 128, one whose exec fails exits 127 (with a line in the log).
StatusOr<Subprocess> SpawnLocalProcess(const LocalProcessSpec& spec);

// Writes `content` to `path` (created with `mode`, or truncated). Internal with errno's text.
Status WriteFileWithMode(const std::string& path, const std::string& content, mode_t mode);

}  // namespace ringmaster::testing
