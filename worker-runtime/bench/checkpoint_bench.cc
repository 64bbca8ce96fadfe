// ringmaster-checkpoint-bench: checkpoint save/restore throughput against the
// disk's own bandwidth, measured by dd in the same run on the same directory.
//
//   ringmaster-checkpoint-bench [--dir DIR] [--sizes-mib 256,1024] [--blobs 4]
//
// For each size: dd write (conv=fsync), a synchronous Save (fsync'd, committed),
// then -- after dropping both files from the page cache with
// posix_fadvise(DONTNEED), so reads come from the disk where the kernel allows
// -- a dd read-back and a LoadLatest (read + CRC32C verify). Prints MB/s
// (10^6 bytes/s) and the ratio to dd.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/cli.h"
#include "checkpoint/checkpoint_store.h"

namespace {

using ringmaster::runtime::checkpoint::BlobRef;
using ringmaster::runtime::checkpoint::CheckpointOptions;
using ringmaster::runtime::checkpoint::CheckpointStore;
using ringmaster::runtime::checkpoint::ListDirectory;
using ringmaster::runtime::checkpoint::RemoveTree;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs a command with /bin/sh, its output discarded; returns the wall seconds or -1.
double TimeCommand(const std::string& command) {
  const double start = Now();
  const int rc = std::system((command + " >/dev/null 2>&1").c_str());
  if (rc != 0) {
    std::fprintf(stderr, "command failed (%d): %s\n", rc, command.c_str());
    return -1;
  }
  return Now() - start;
}

void DropFromCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void DropDirFromCache(const std::string& dir) {
  auto names = ListDirectory(dir);
  if (!names.ok()) return;
  for (const std::string& name : *names) DropFromCache(dir + "/" + name);
}

double Mbps(uint64_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e6 : 0; }

// One size: dd write, Save, dd read-back, LoadLatest; prints two lines. False on a failure (printed).
bool BenchOneSize(CheckpointStore& store, const std::string& ddfile, uint64_t mib, int blobs, int64_t step) {
  const uint64_t bytes = mib << 20;
  std::fprintf(stderr, "[%llu MiB] filling the buffer...\n", static_cast<unsigned long long>(mib));
  std::vector<std::byte> data(bytes);
  for (uint64_t i = 0; i < bytes; i += 4096) data[i] = static_cast<std::byte>(i * 2654435761u >> 13);

  std::fprintf(stderr, "[%llu MiB] dd write (conv=fsync)...\n", static_cast<unsigned long long>(mib));
  const double dd_write = TimeCommand("dd if=/dev/zero of=" + ddfile + " bs=1M count=" + std::to_string(mib) +
                                      " conv=fsync");
  std::fprintf(stderr, "[%llu MiB] checkpoint save...\n", static_cast<unsigned long long>(mib));
  std::vector<BlobRef> refs;
  std::vector<std::string> names;
  for (int b = 0; b < blobs; ++b) names.push_back("blob" + std::to_string(b));
  const uint64_t per = bytes / blobs;
  for (int b = 0; b < blobs; ++b) {
    const uint64_t begin = per * b, end = b + 1 == blobs ? bytes : per * (b + 1);
    refs.push_back({names[b], std::span<const std::byte>(data.data() + begin, end - begin)});
  }
  auto saved = store.Save(step, 1, refs);
  if (!saved.ok()) {
    std::fprintf(stderr, "save: %s\n", saved.status().ToString().c_str());
    return false;
  }
  std::printf("%-9s %-22s %10.3f %10.1f %10.1f %8.2f\n", (std::to_string(mib) + "MiB").c_str(),
              "save (fsync, commit)", saved->seconds, Mbps(bytes, saved->seconds), Mbps(bytes, dd_write),
              dd_write > 0 ? dd_write / saved->seconds : 0.0);
  data = {};

  std::fprintf(stderr, "[%llu MiB] dd read-back...\n", static_cast<unsigned long long>(mib));
  DropFromCache(ddfile);
  const double dd_read = TimeCommand("dd if=" + ddfile + " of=/dev/null bs=1M");
  std::fprintf(stderr, "[%llu MiB] checkpoint restore...\n", static_cast<unsigned long long>(mib));
  DropDirFromCache(saved->path);
  auto loaded = store.LoadLatest();
  if (!loaded.ok()) {
    std::fprintf(stderr, "load: %s\n", loaded.status().ToString().c_str());
    return false;
  }
  std::printf("%-9s %-22s %10.3f %10.1f %10.1f %8.2f\n", (std::to_string(mib) + "MiB").c_str(),
              "restore (read, verify)", loaded->stats.seconds, Mbps(bytes, loaded->stats.seconds),
              Mbps(bytes, dd_read), dd_read > 0 ? dd_read / loaded->stats.seconds : 0.0);
  std::fflush(stdout);
  ::unlink(ddfile.c_str());
  return true;
}

// The command line, parsed once (base/cli.h).
struct Flags {
  std::string dir = "/tmp/ringmaster-checkpoint-bench";
  std::vector<uint64_t> sizes_mib = {256, 1024};
  int blobs = 4;
  bool help = false;
};

std::unique_ptr<CLI::App> NewApp(Flags& f) {
  auto app = ringmaster::cli::NewApp("ringmaster-checkpoint-bench",
                                     "ringmaster-checkpoint-bench: checkpoint save/restore throughput against dd on the "
                                     "same disk.");
  app->add_option("--dir", f.dir, "scratch directory (emptied first)");
  app->add_option("--sizes-mib", f.sizes_mib, "checkpoint sizes in MiB, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app->add_option("--blobs", f.blobs, "blobs per checkpoint")->check(CLI::Range(1, 4096));
  return app;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = ringmaster::cli::ParseInto<Flags>(NewApp, ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly<Flags>("ringmaster-checkpoint-bench", flags, NewApp)) return *exit_code;
  const std::string dir = flags->dir;
  const std::vector<uint64_t> sizes_mib = flags->sizes_mib;
  const int blobs = flags->blobs;
  if (!RemoveTree(dir).ok()) return 1;
  CheckpointOptions options;
  options.dir = dir + "/checkpoints";
  options.keep_last = 1;
  auto store = CheckpointStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const std::string ddfile = dir + "/ddtest";
  std::printf("directory: %s (%d blobs per checkpoint)\n", dir.c_str(), blobs);
  std::printf("%-9s %-22s %10s %10s %10s %8s\n", "size", "operation", "seconds", "MB/s", "dd MB/s", "ratio");
  int64_t step = 0;
  for (uint64_t mib : sizes_mib) {
    if (!BenchOneSize(**store, ddfile, mib, blobs, ++step)) return 1;
  }
  (void)RemoveTree(dir);
  return 0;
}
