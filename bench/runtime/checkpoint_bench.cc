// ringmaster-checkpoint-bench: checkpoint save/restore throughput against the
// disk's own bandwidth, measured by dd in the same run on the same directory.
//
//   ringmaster-checkpoint-bench [--dir DIR] [--sizes-mib 256,1024] [--blobs 4] [--reps 5]
//                               [--dd-bs-mib 1] [--json PATH]
// --json also writes each printed row as a figure for `make bench-report` (goal: >= 0.8x dd; bench/bench_json.h).
//
// Cache-neutral, so that the figures say what the disk does and not what the
// page cache holds:
//   - dd writes with oflag=direct conv=fsync and reads with iflag=direct (O_DIRECT);
//   - our files are fsync'd and dropped from the page cache with
//     posix_fadvise(POSIX_FADV_DONTNEED) right before each timed restore (no
//     machine-wide drop_caches: the machine is shared);
//   - writes are timed until durable on both sides (dd's fsync; Save's fsyncs,
//     manifest, rename and directory fsyncs);
//   - both sides write fresh files: the previous checkpoint and the previous dd
//     file are deleted, and the file system synced, before the clock starts
//     (so neither pays for freeing the other's blocks).
// Each size runs --reps rounds; in a round each side writes and reads back its
// file, and dd and ours alternate which goes first. Ours restores three ways,
// each right after a save of its own (so every read follows its own write, as
// dd's does; the save row has three figures per round):
//   - into the caller's existing, already touched memory, 4096-aligned
//     (LoadLatestInto, O_DIRECT straight into it) -- e.g. a page-aligned
//     model arena;
//   - into existing touched memory 16 bytes off alignment, as malloc and new
//     hand out large blocks (LoadLatestInto through its bounce buffer) -- the
//     common case for a restarted worker that built its model first;
//   - into fresh memory (LoadLatest allocates the buffers), which pays for
//     first-touching every page: on a VM that can be slower than the disk.
// The destinations are cleared (untimed) before each restore into them.
// Printed per operation: the median MB/s (10^6 bytes/s) with its spread
// (min-max) for ours and for dd, and the ratio of the medians (ours / dd;
// >= 1 means ours is at least as fast; every restore row is against the same
// dd read). The load average is printed at the start and the end; per size, for scale, the CRC32C's own GB/s on one
// core and how fast the machine hands out fresh memory (a restore fills new buffers). Every restore is compared with
// the bytes saved (untimed). Progress on stderr.
//
// Needs dd (coreutils) on PATH and about twice the largest size free in --dir,
// which is created, emptied first and removed at the end.
#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/subprocess.h"
#include "bench/bench_json.h"
#include "worker-runtime/checkpoint/byte_buffer.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/checkpoint/crc32c.h"

namespace ringmaster::bench {
namespace {

using ringmaster::checkpoint::BlobDestination;
using ringmaster::checkpoint::BlobRef;
using ringmaster::checkpoint::ByteBuffer;
using ringmaster::checkpoint::CheckpointOptions;
using ringmaster::checkpoint::CheckpointStore;
using ringmaster::checkpoint::Crc32c;
using ringmaster::checkpoint::ListDirectory;
using ringmaster::checkpoint::MakeDirectories;
using ringmaster::checkpoint::RemoveTree;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string LoadAverage() {
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return buf;
}

// Runs argv (PATH lookup, output discarded) and returns its wall seconds.
StatusOr<double> TimeCommand(const std::vector<std::string>& argv) {
  ringmaster::SpawnOptions options;
  options.argv = argv;
  options.out = ringmaster::Redirect::Null();
  options.err = ringmaster::Redirect::Null();
  const double start = Now();
  RINGMASTER_ASSIGN_OR_RETURN(ringmaster::Subprocess child, ringmaster::Subprocess::Start(options));
  const ringmaster::ExitStatus exit = child.Wait();
  const double seconds = Now() - start;
  if (!exit.exited() || exit.code != 0) {
    return ringmaster::InternalError(argv[0] + " " + argv[1] + "...: " + exit.ToString());
  }
  return seconds;
}

// Writes back and drops `path` from the page cache (a regular file), or every file in it (a directory).
void DropFromCache(const std::string& path) {
  auto names = ListDirectory(path);
  if (names.ok()) {
    for (const std::string& name : *names) DropFromCache(path + "/" + name);
    return;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Deletes `path` (file or tree) and syncs the file system under `dir`, so freeing its blocks is not timed.
void RemoveAndSettle(const std::string& path, const std::string& dir) {
  (void)RemoveTree(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::syncfs(fd);
  ::close(fd);
}

// MB/s figures of one operation on one side, one per round.
struct Series {
  std::vector<double> mbps;
  double Median() const {
    std::vector<double> v = mbps;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  double Min() const { return mbps.empty() ? 0 : *std::min_element(mbps.begin(), mbps.end()); }
  double Max() const { return mbps.empty() ? 0 : *std::max_element(mbps.begin(), mbps.end()); }
};

double Mbps(uint64_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e6 : 0; }

// The command line, parsed once (base/cli.h).
struct Flags {
  std::string dir = "/tmp/ringmaster-checkpoint-bench";
  std::vector<uint64_t> sizes_mib = {256, 1024};
  int blobs = 4;
  int reps = 5;
  int dd_bs_mib = 1;
  std::string json;
  bool help = false;
};

// One size's context: the bytes to save and where things go.
struct SizeRun {
  SizeRun(const Flags& f, CheckpointStore& s) : flags(f), store(s) {}
  const Flags& flags;
  CheckpointStore& store;
  uint64_t mib = 0;
  uint64_t bytes = 0;
  std::vector<std::byte> data;
  std::vector<std::string> names;
  std::vector<BlobRef> refs;
  ByteBuffer existing;                           // the caller's memory: bytes + 4096, aligned, touched
  std::vector<BlobDestination> aligned_dests;    // blob b at existing + b * per
  std::vector<BlobDestination> unaligned_dests;  // the same, 16 bytes further (malloc's offset)
  std::string ddfile;
  int64_t step = 0;  // the newest saved step (0: none yet)
  Series save, restore_aligned, restore_unaligned, restore_fresh, dd_write, dd_read;

  void Progress(const std::string& what) const {
    std::fprintf(stderr, "[%llu MiB] %s\n", static_cast<unsigned long long>(mib), what.c_str());
  }
};

void FillData(SizeRun& run) {
  run.data.resize(run.bytes);
  // Not compressible, not zero: splitmix64 words.
  uint64_t x = run.mib;
  for (uint64_t i = 0; i + 8 <= run.bytes; i += 8) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    std::memcpy(run.data.data() + i, &z, 8);
  }
  const uint64_t per = run.bytes / run.flags.blobs;
  for (int b = 0; b < run.flags.blobs; ++b) run.names.push_back("blob" + std::to_string(b));
  for (int b = 0; b < run.flags.blobs; ++b) {
    const uint64_t begin = per * b, end = b + 1 == run.flags.blobs ? run.bytes : per * (b + 1);
    run.refs.push_back({run.names[b], std::span<const std::byte>(run.data.data() + begin, end - begin)});
  }
}

// The caller's existing memory, touched once here (a built model), carved into one destination per blob.
Status AllocateDestinations(SizeRun& run) {
  RINGMASTER_ASSIGN_OR_RETURN(run.existing, ByteBuffer::Allocate(run.bytes + 4096));
  std::memset(run.existing.data.get(), 0, run.existing.size);
  size_t offset = 0;
  for (const BlobRef& ref : run.refs) {
    std::byte* const at = run.existing.data.get() + offset;
    run.aligned_dests.push_back({ref.name, std::span<std::byte>(at, ref.data.size())});
    run.unaligned_dests.push_back({ref.name, std::span<std::byte>(at + 16, ref.data.size())});
    offset += ref.data.size();
  }
  return Status::Ok();
}

// For scale, in the same run: the checksum alone (in memory, one core), and how fast this machine hands out
// fresh memory (a restore fills new buffers; dd reuses one block). On a VM that reports free memory to its
// host, first touches are host page faults and can be slower than the disk.
void PrintCpuAndMemory(const SizeRun& run) {
  double start = Now();
  const uint32_t crc = Crc32c(run.data.data(), run.data.size());
  const double crc_seconds = Now() - start;
  start = Now();
  {
    std::unique_ptr<std::byte[]> fresh(new std::byte[run.bytes]);  // not initialized: untouched
    for (size_t at = 0; at < run.bytes; at += 4096) static_cast<volatile std::byte*>(fresh.get())[at] = {};
  }
  const double touch_seconds = Now() - start;
  std::printf("%-9s crc32c in memory, one core: %.2f GB/s (crc %08x); fresh memory, first touch: %.2f GB/s\n",
              (std::to_string(run.mib) + "MiB").c_str(), run.bytes / crc_seconds / 1e9, crc,
              run.bytes / touch_seconds / 1e9);
}

Status DdWrite(SizeRun& run) {
  RemoveAndSettle(run.ddfile, run.flags.dir);
  const uint64_t count = run.mib / run.flags.dd_bs_mib;
  RINGMASTER_ASSIGN_OR_RETURN(
      double seconds,
      TimeCommand({"dd", "if=/dev/zero", "of=" + run.ddfile, "bs=" + std::to_string(run.flags.dd_bs_mib) + "M",
                   "count=" + std::to_string(count), "oflag=direct", "conv=fsync"}));
  run.dd_write.mbps.push_back(Mbps(count * run.flags.dd_bs_mib << 20, seconds));
  return Status::Ok();
}

Status DdRead(SizeRun& run) {
  DropFromCache(run.ddfile);
  RINGMASTER_ASSIGN_OR_RETURN(double seconds,
                              TimeCommand({"dd", "if=" + run.ddfile, "of=/dev/null",
                                           "bs=" + std::to_string(run.flags.dd_bs_mib) + "M", "iflag=direct"}));
  run.dd_read.mbps.push_back(Mbps(run.mib / run.flags.dd_bs_mib * run.flags.dd_bs_mib << 20, seconds));
  return Status::Ok();
}

Status Save(SizeRun& run) {
  if (run.step > 0) RemoveAndSettle(run.store.dir() + "/step-" + std::to_string(run.step), run.flags.dir);
  const double start = Now();
  RINGMASTER_RETURN_IF_ERROR(run.store.Save(++run.step, 1, run.refs).status());
  run.save.mbps.push_back(Mbps(run.bytes, Now() - start));
  return Status::Ok();
}

// Compares what a restore put in `blob` with the saved bytes (untimed).
Status CheckRestored(const BlobRef& ref, const std::byte* blob, size_t size) {
  if (size != ref.data.size() || std::memcmp(blob, ref.data.data(), size) != 0) {
    return ringmaster::InternalError("restored blob " + std::string(ref.name) + " differs from the saved bytes");
  }
  return Status::Ok();
}

// Restores into fresh buffers that LoadLatest allocates.
Status RestoreFresh(SizeRun& run) {
  DropFromCache(run.store.dir());
  const double start = Now();
  RINGMASTER_ASSIGN_OR_RETURN(auto loaded, run.store.LoadLatest());
  run.restore_fresh.mbps.push_back(Mbps(run.bytes, Now() - start));
  if (loaded.manifest.step != run.step) return ringmaster::InternalError("restored the wrong step");
  for (const BlobRef& ref : run.refs) {
    const auto& blob = loaded.blobs.at(std::string(ref.name));
    RINGMASTER_RETURN_IF_ERROR(CheckRestored(ref, blob.data.get(), blob.size));
  }
  return Status::Ok();
}

// Restores into the caller's existing memory (aligned or not), cleared first so that the check means something.
Status RestoreExisting(SizeRun& run, bool aligned) {
  std::memset(run.existing.data.get(), 0, run.existing.size);
  const std::vector<BlobDestination>& dests = aligned ? run.aligned_dests : run.unaligned_dests;
  DropFromCache(run.store.dir());
  const double start = Now();
  RINGMASTER_ASSIGN_OR_RETURN(auto restored, run.store.LoadLatestInto(dests));
  (aligned ? run.restore_aligned : run.restore_unaligned).mbps.push_back(Mbps(run.bytes, Now() - start));
  if (restored.manifest.step != run.step) return ringmaster::InternalError("restored the wrong step");
  for (size_t b = 0; b < run.refs.size(); ++b) {
    RINGMASTER_RETURN_IF_ERROR(CheckRestored(run.refs[b], dests[b].data.data(), dests[b].data.size()));
  }
  return Status::Ok();
}

std::string Last(const Series& s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MB/s", s.mbps.empty() ? 0 : s.mbps.back());
  return buf;
}

// One round: each side writes and then reads back its own file, dd first in even rounds and ours first in
// odd ones. (Each read follows its own write directly, so a cache below the guest -- a VM's host -- treats
// both sides alike.)
Status Round(SizeRun& run, int round) {
  auto dd = [&run] {
    RINGMASTER_RETURN_IF_ERROR(DdWrite(run));
    return DdRead(run);
  };
  auto ours = [&run] {
    RINGMASTER_RETURN_IF_ERROR(Save(run));
    RINGMASTER_RETURN_IF_ERROR(RestoreExisting(run, /*aligned=*/true));
    RINGMASTER_RETURN_IF_ERROR(Save(run));
    RINGMASTER_RETURN_IF_ERROR(RestoreExisting(run, /*aligned=*/false));
    RINGMASTER_RETURN_IF_ERROR(Save(run));
    return RestoreFresh(run);
  };
  RINGMASTER_RETURN_IF_ERROR(round % 2 == 0 ? dd() : ours());
  RINGMASTER_RETURN_IF_ERROR(round % 2 == 0 ? ours() : dd());
  run.Progress("round " + std::to_string(round + 1) + "/" + std::to_string(run.flags.reps) + ": save " +
               Last(run.save) + ", dd write " + Last(run.dd_write) + ", restore into touched aligned " +
               Last(run.restore_aligned) + ", unaligned " + Last(run.restore_unaligned) + ", fresh " +
               Last(run.restore_fresh) + ", dd read " + Last(run.dd_read) + " (load " + LoadAverage() + ")");
  return Status::Ok();
}

// Records a printed row as a --json figure: id "checkpoint.<mib>MiB.<operation's words before any '('>",
// lower case, runs of other characters as one '_' (e.g. restore_into_touched_4k_aligned).
void RecordRow(Report& report, uint64_t mib, const std::string& operation, const Series& ours, const Series& dd) {
  const std::string op = operation.substr(0, operation.find(" ("));
  std::string slug;
  for (char c : op) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!slug.empty() && slug.back() != '_')
      slug += '_';
  }
  report.Figure("checkpoint." + std::to_string(mib) + "MiB." + slug,
                "checkpoint " + operation + ", " + std::to_string(mib) + " MiB (median)", "MB/s", ours.Median(),
                dd.Median(), "O_DIRECT dd", RatioAtLeast(0.8, ">= 0.8x dd"))["load"] = LoadAverage();
}

void PrintRow(Report& report, uint64_t mib, const char* operation, const Series& ours, const Series& dd) {
  RecordRow(report, mib, operation, ours, dd);
  char ours_text[40], dd_text[40];
  std::snprintf(ours_text, sizeof ours_text, "%.0f (%.0f-%.0f)", ours.Median(), ours.Min(), ours.Max());
  std::snprintf(dd_text, sizeof dd_text, "%.0f (%.0f-%.0f)", dd.Median(), dd.Min(), dd.Max());
  std::printf("%-9s %-33s %-20s %-20s %6.2f\n", (std::to_string(mib) + "MiB").c_str(), operation, ours_text, dd_text,
              dd.Median() > 0 ? ours.Median() / dd.Median() : 0.0);
  std::fflush(stdout);
}

Status BenchOneSize(const Flags& flags, CheckpointStore& store, uint64_t mib, Report& report) {
  SizeRun run(flags, store);
  run.mib = mib;
  run.bytes = mib << 20;
  run.ddfile = flags.dir + "/ddtest";
  run.Progress("filling the buffer...");
  FillData(run);
  RINGMASTER_RETURN_IF_ERROR(AllocateDestinations(run));
  PrintCpuAndMemory(run);
  for (int round = 0; round < flags.reps; ++round) RINGMASTER_RETURN_IF_ERROR(Round(run, round));
  PrintRow(report, mib, "save (write, fsync, commit)", run.save, run.dd_write);
  PrintRow(report, mib, "restore into touched, 4K-aligned", run.restore_aligned, run.dd_read);
  PrintRow(report, mib, "restore into touched, unaligned", run.restore_unaligned, run.dd_read);
  PrintRow(report, mib, "restore into fresh memory", run.restore_fresh, run.dd_read);
  RemoveAndSettle(run.ddfile, flags.dir);
  RemoveAndSettle(store.dir() + "/step-" + std::to_string(run.step), flags.dir);
  return Status::Ok();
}

std::unique_ptr<CLI::App> NewApp(Flags& f) {
  auto app = ringmaster::cli::NewApp("ringmaster-checkpoint-bench",
                                     "ringmaster-checkpoint-bench: checkpoint save/restore throughput against dd "
                                     "(O_DIRECT, fsync) on the same disk, page cache dropped before reads; median "
                                     "of --reps rounds.");
  app->add_option("--dir", f.dir, "scratch directory (emptied first, removed at the end)");
  app->add_option("--sizes-mib", f.sizes_mib, "checkpoint sizes in MiB, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app->add_option("--blobs", f.blobs, "blobs per checkpoint")->check(CLI::Range(1, 4096));
  app->add_option("--reps", f.reps, "rounds per size (the median is printed)")->check(CLI::Range(1, 1000));
  app->add_option("--dd-bs-mib", f.dd_bs_mib, "dd's block size in MiB")->check(CLI::Range(1, 1024));
  app->add_option("--json", f.json, "also write the figures here, for make bench-report (bench/README.md)");
  return app;
}

std::string FileSystemType(const std::string& dir) {
  struct statfs st{};
  if (::statfs(dir.c_str(), &st) != 0) return "unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(st.f_type));
  return buf;
}

int Main(int argc, char** argv) {
  auto flags = ringmaster::cli::ParseInto<Flags>(NewApp, ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly<Flags>("ringmaster-checkpoint-bench", flags, NewApp))
    return *exit_code;
  if (Status s = RemoveTree(flags->dir); !s.ok() || !(s = MakeDirectories(flags->dir)).ok()) {
    std::fprintf(stderr, "ringmaster-checkpoint-bench: %s\n", s.ToString().c_str());
    return 1;
  }
  Report report("checkpoint", argc, argv);
  CheckpointOptions options;
  options.dir = flags->dir + "/checkpoints";
  options.keep_last = 1;
  auto store = CheckpointStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "ringmaster-checkpoint-bench: open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "directory: %s (file system magic %s), %d blobs per checkpoint, median of %d rounds, ours and dd "
      "alternating first\n",
      flags->dir.c_str(), FileSystemType(flags->dir).c_str(), flags->blobs, flags->reps);
  std::printf(
      "dd: bs=%dM, writes oflag=direct conv=fsync, reads iflag=direct; ours: page cache dropped "
      "(fsync + POSIX_FADV_DONTNEED) before each restore\n",
      flags->dd_bs_mib);
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::printf("%-9s %-33s %-20s %-20s %6s\n", "size", "operation", "ours MB/s (min-max)", "dd MB/s (min-max)", "ratio");
  int rc = 0;
  for (uint64_t mib : flags->sizes_mib) {
    if (Status s = BenchOneSize(*flags, **store, mib, report); !s.ok()) {
      std::fprintf(stderr, "ringmaster-checkpoint-bench: %s\n", s.ToString().c_str());
      rc = 1;
      break;
    }
  }
  std::printf("load average at end: %s\n", LoadAverage().c_str());
  (void)RemoveTree(flags->dir);
  if (!report.Write(flags->json)) rc = 1;
  return rc;
}

}  // namespace
}  // namespace ringmaster::bench

int main(int argc, char** argv) { return ringmaster::bench::Main(argc, argv); }
