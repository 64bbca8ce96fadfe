#include "pod_runner/rootfs_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
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

// Marks `dir` as just used (its mtime), which is what pruning goes by.
void Touch(const std::string& dir) { (void)::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0); }

// Every new image leaves ~GBs behind: unpacked roots beyond the `keep` most recently used go, but only
// those unused for a day, so a root another test process is running on is never taken from under it.
void Prune(const std::string& cache_dir, const std::string& current, size_t keep,
           const std::function<void(const std::string&)>& progress) {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> roots;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (!e.is_directory() || e.path().filename().string().rfind('.', 0) == 0 || e.path() == current) continue;
    roots.emplace_back(e.last_write_time(ec), e.path());
  }
  std::sort(roots.rbegin(), roots.rend());
  const auto day_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(24);
  for (size_t i = keep > 0 ? keep - 1 : 0; i < roots.size(); ++i) {
    if (roots[i].first > day_ago) continue;
    progress("removing the unpacked image " + roots[i].second.string() + " (unused for a day)");
    std::filesystem::remove_all(roots[i].second, ec);
    std::filesystem::remove(roots[i].second.string() + ".lock", ec);
  }
}

}  // namespace

std::string DefaultRootfsCacheDir() {
  if (const char* cache = std::getenv("RINGMASTER_CACHE"); cache && *cache) return std::string(cache) + "/rootfs";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/ringmaster/rootfs";
}

StatusOr<std::string> EnsureRootfs(const LocalImage& image, const std::string& cache_dir,
                                   const std::function<void(const std::string&)>& progress,
                                   std::chrono::seconds timeout) {
  const size_t colon = image.manifest_digest.find(':');
  const std::string hex = image.manifest_digest.substr(colon == std::string::npos ? 0 : colon + 1);
  if (hex.empty()) return InvalidArgumentError("image " + image.reference + " has no manifest digest");
  const std::string dir = cache_dir + "/" + hex, rootfs = dir + "/rootfs";
  std::error_code ec;
  if (std::filesystem::is_directory(rootfs, ec)) {
    Touch(dir);
    return rootfs;
  }

  std::filesystem::create_directories(cache_dir, ec);
  if (ec) return InternalError("cannot create the rootfs cache " + cache_dir + ": " + ec.message());
  const std::string lock_path = dir + ".lock";
  int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return InternalError("cannot open " + lock_path + ": " + std::strerror(errno));
  const auto started = Clock::now();
  int locked;
  while ((locked = ::flock(lock, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (locked != 0) {
    ::close(lock);
    return InternalError("cannot lock " + lock_path + ": " + std::strerror(errno));
  }
  Status result = Status::Ok();
  if (!std::filesystem::is_directory(rootfs, ec)) {  // not unpacked by another process meanwhile
    const std::string tmp = cache_dir + "/.unpacking-" + hex + "-" + std::to_string(::getpid());
    const std::string layout = tmp + "/layout", bundle = tmp + "/bundle";
    progress("unpacking image " + image.reference + " (" + image.archive + ", manifest " + image.manifest_digest.substr(0, 19) +
             ") into " + dir);
    const auto deadline = Clock::now() + timeout;
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
    if (result.ok()) {
      char took[32];
      std::snprintf(took, sizeof(took), "%.1f", std::chrono::duration<double>(Clock::now() - started).count());
      progress("unpacked image " + image.reference + " in " + took + " s");
      Prune(cache_dir, dir, 3, progress);
    } else {
      result = result.WithContext("unpacking image " + image.reference);
    }
  }
  ::close(lock);  // releases the flock
  if (!result.ok()) return result;
  return rootfs;
}

}  // namespace ringmaster::testing
