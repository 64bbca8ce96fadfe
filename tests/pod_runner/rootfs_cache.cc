#include "tests/pod_runner/rootfs_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "base/subprocess.h"

namespace ringmaster::testing {

namespace {

using Clock = std::chrono::steady_clock;

// Runs a command to completion; Internal with its output when it fails.
Status RunTool(const std::vector<std::string>& argv, Clock::time_point deadline) {
  SpawnOptions o;
  o.argv = argv;
  o.out = Redirect::Pipe();
  o.err = Redirect::Pipe();
  RINGMASTER_ASSIGN_OR_RETURN(Subprocess p, Subprocess::Start(o));
  Subprocess::Output out = p.Communicate("", deadline);
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (out.timed_out) {
    p.Kill();
    return DeadlineExceededError(cmd + " did not finish in time");
  }
  ExitStatus e = p.Wait();
  if (e.ShellCode() != 0) {
    std::string text = out.err.empty() ? out.out : out.err;
    if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
    return InternalError(cmd + " " + e.ToString() + ": " + text);
  }
  return Status::Ok();
}

// flock(2), retried when a signal interrupts it.
int Flock(int fd, int operation) {
  int r;
  while ((r = ::flock(fd, operation)) != 0 && errno == EINTR) {}
  return r;
}

// True when `name` is ".unpacking-<hex>-<pid>" of a process that no longer exists (it crashed mid-unpack).
bool IsAbandonedUnpack(const std::string& name) {
  if (name.rfind(".unpacking-", 0) != 0) return false;
  const size_t dash = name.rfind('-');
  const long pid = std::strtol(name.c_str() + dash + 1, nullptr, 10);
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string DefaultRootfsCacheDir() {
  if (const char* cache = std::getenv("RINGMASTER_CACHE"); cache && *cache) return std::string(cache) + "/rootfs";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/ringmaster/rootfs";
}

RootfsLease::RootfsLease(RootfsLease&& other) noexcept
    : rootfs_(std::move(other.rootfs_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {}

RootfsLease& RootfsLease::operator=(RootfsLease&& other) noexcept {
  if (this != &other) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    rootfs_ = std::move(other.rootfs_);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

RootfsLease::~RootfsLease() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the shared flock
}

int PruneUnusedRootfs(const std::string& cache_dir, const std::string& keep,
                      const std::function<void(const std::string&)>& progress) {
  int removed = 0;
  std::error_code ec;
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (e.is_directory(ec)) entries.push_back(e.path());
  }
  for (const auto& path : entries) {
    const std::string name = path.filename().string();
    if (IsAbandonedUnpack(name)) {
      progress("removing " + path.string() + " (left by an unpack whose process is gone)");
      std::filesystem::remove_all(path, ec);
      continue;
    }
    if (name.rfind('.', 0) == 0 || path.string() == keep) continue;
    // The lock files stay (empty): removing one another process has open would split the lock in two.
    const std::string lock_path = path.string() + ".lock";
    const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0) continue;
    if (Flock(lock, LOCK_EX | LOCK_NB) == 0) {  // no lease anywhere, and none can start until we are done
      progress("removing the unpacked image " + path.string() + " (no container uses it)");
      std::filesystem::remove_all(path, ec);
      if (ec) progress("could not remove " + path.string() + ": " + ec.message());
      ++removed;
    }
    ::close(lock);
  }
  return removed;
}

StatusOr<RootfsLease> EnsureRootfs(const LocalImage& image, const std::string& cache_dir,
                                   const std::function<void(const std::string&)>& progress,
                                   std::chrono::seconds timeout) {
  const size_t colon = image.manifest_digest.find(':');
  const std::string hex = image.manifest_digest.substr(colon == std::string::npos ? 0 : colon + 1);
  if (hex.empty()) return InvalidArgumentError("image " + image.reference + " has no manifest digest");
  const std::string dir = cache_dir + "/" + hex, rootfs = dir + "/rootfs";
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  if (ec) return InternalError("cannot create the rootfs cache " + cache_dir + ": " + ec.message());
  const std::string lock_path = dir + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return InternalError("cannot open " + lock_path + ": " + std::strerror(errno));
  auto fail = [lock](Status s) {
    ::close(lock);
    return s;
  };

  // flock cannot convert between shared and exclusive atomically, so a pruner may take the root in the
  // gap after an unpack; then it is unpacked again.
  for (int attempt = 0;; ++attempt) {
    if (Flock(lock, LOCK_SH) != 0) return fail(InternalError("cannot lock " + lock_path + ": " + std::strerror(errno)));
    if (std::filesystem::is_directory(rootfs, ec)) return RootfsLease(rootfs, lock);
    if (attempt == 3) {
      return fail(
          AbortedError("the unpacked image " + dir + " was removed three times before it could be taken; try again"));
    }
    if (Flock(lock, LOCK_EX) != 0) return fail(InternalError("cannot lock " + lock_path + ": " + std::strerror(errno)));
    if (std::filesystem::is_directory(rootfs, ec)) continue;  // another process unpacked it meanwhile

    const auto started = Clock::now();
    const std::string tmp = cache_dir + "/.unpacking-" + hex + "-" + std::to_string(::getpid());
    const std::string layout = tmp + "/layout", bundle = tmp + "/bundle";
    progress("unpacking image " + image.reference + " (" + image.archive + ", manifest " +
             image.manifest_digest.substr(0, 19) + ") into " + dir);
    const auto deadline = Clock::now() + timeout;
    Status result = Status::Ok();
    std::filesystem::remove_all(tmp, ec);
    std::filesystem::create_directories(layout, ec);
    if (ec) result = InternalError("cannot create " + layout + ": " + ec.message());
    if (result.ok()) result = RunTool({"tar", "-xf", image.archive, "-C", layout}, deadline);
    if (result.ok()) result = RunTool({"umoci", "unpack", "--image", layout + ":" + image.tag, bundle}, deadline);
    if (result.ok()) {
      std::filesystem::remove_all(layout, ec);
      if (::rename(bundle.c_str(), dir.c_str()) != 0) {
        result = InternalError("cannot rename " + bundle + " to " + dir + ": " + std::strerror(errno));
      }
    }
    std::filesystem::remove_all(tmp, ec);
    if (!result.ok()) return fail(result.WithContext("unpacking image " + image.reference));
    char took[32];
    std::snprintf(took, sizeof(took), "%.1f", std::chrono::duration<double>(Clock::now() - started).count());
    progress("unpacked image " + image.reference + " in " + took + " s");
    // A new image usually replaces an older one: roots no container holds go (each is GBs).
    PruneUnusedRootfs(cache_dir, dir, progress);
  }
}

}  // namespace ringmaster::testing
