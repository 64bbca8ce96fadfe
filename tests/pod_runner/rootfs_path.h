// Paths inside an unpacked root filesystem, resolved as the container will see them: symbolic links are
// followed inside the root (an absolute link restarts at the root, ".." stops at it), never out to the
// host's files (Debian's /var/run -> /run must land on the image's /run, not the host's). Used before a
// container starts, on the image's read-only rootfs, to place mount points and read /etc/passwd.
// Thread-safe (reads the filesystem only).
#pragma once

#include <string>

#include "base/status.h"

namespace ringmaster::testing {

// `path` (absolute, inside the root) with every symlink in it resolved inside `root`; components that do
// not exist are kept as written. Returns the path inside the root ("/run/secrets/..."). InvalidArgument
// for a relative path or too many links (a loop).
StatusOr<std::string> ResolveInRoot(const std::string& root, const std::string& path);

// The content of the regular file `path` inside `root` (resolved as above); "" when it does not exist.
std::string ReadFileInRoot(const std::string& root, const std::string& path);

}  // namespace ringmaster::testing
