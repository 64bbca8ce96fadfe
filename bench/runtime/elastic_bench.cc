// ringmaster-elastic-bench: how long from a worker's death to the next
// successful allreduce, at 2, 4, 8, 16 and 32 ranks, split by phase, with the
// median and p90 of --trials (--large-trials above 8 ranks: 16 and 32
// processes on a small machine are slow). A benchmark that prints figures, not
// a test.
//
// The bench is its own launcher: it forks N workers (ElasticDriver over a
// FileMembershipSource, a 1-float allreduce per step), then per trial kills the
// last rank with SIGKILL, notices it with waitpid, publishes the smaller
// membership, and reads back when the survivors' first allreduce of the new
// generation completed (CLOCK_MONOTONIC is shared by all processes). A
// replacement is added after each trial (not measured) to get back to N.
//
// The peer, in the same run: bare Gloo connecting a full mesh of N-1 processes
// (the rebuilt world's size) over the same store and transport
// (gloo_connect_peer.h); ratio = our communicator phase / that connect. The
// same processes also time our parallel connect alone (ConnectMesh,
// worker-runtime/gloo/gloo_connect.h), the communicator phase's Gloo part.
// The scratch directory (the membership file) defaults to /dev/shm, so that
// the launcher's fsyncs of the record are not part of the figures.
//
// --backends gloo,nccl measures each backend in turn. Under NCCL the survivors'
// in-flight allreduce is revoked when the smaller record arrives (in `detect`),
// the communicator phase is ncclCommShrink when every survivor holds a revoked
// communicator (the `shrunk` column: the fraction of survivors' rebuilds that
// shrank) and the 1-float buffers live on each worker's GPU (worker i on GPU
// i % visible GPUs for its life; a replacement takes its predecessor's). On a
// machine without GPUs, RINGMASTER_EMULATED_GPUS=N runs it on the CPU emulation
// of NCCL and CUDA (tests/gpu_emulation): figures of our protocol, not of NCCL.
//
//   ringmaster-elastic-bench [--sizes 2,4,8,16,32] [--trials 20] [--large-trials 5] [--backends gloo,nccl]
//                            [--out DIR] [--json PATH]
// --json also writes the figures and each size's phase medians for `make bench-report` (bench/bench_json.h).
// RINGMASTER_BENCH_VERBOSE=1 prints every worker's log lines with CLOCK_MONOTONIC stamps (ms).
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "bench/bench_json.h"
#include "bench/runtime/gloo_connect_peer.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/membership/file_source.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/store/socket.h"

namespace ringmaster::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// A free port for a worker's store at or after `*next`, below the kernel's ephemeral range: a port found by
// binding port 0 is an ephemeral one, which a Gloo pair's listener (binding port 0 as well) can take before the
// worker binds it -- a replacement then failed with "Address already in use" and the bench waited for it forever.
uint16_t FreePort(int* next) {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  for (; *next < low && *next < 65536; ++*next) {
    if (store::Socket::Listen("127.0.0.1", static_cast<uint16_t>(*next)).ok()) return static_cast<uint16_t>((*next)++);
  }
  auto s = store::Socket::Listen("127.0.0.1", 0);  // no room below the range: an ephemeral one, as before
  return s.ok() ? s->LocalPort() : 0;
}

// The worker: trains forever; after each rebuild, appends
// "gen t_step_start_ns t_first_allreduce_done_ns detect rdzv comm restore shrunk" (the phases in seconds). The
// step of a new generation starts right after its rebuild's restore, so the phases' ends on this rank follow
// backwards from t_step_start.
[[noreturn]] void Worker(const std::string& dir, const std::string& id, uint16_t port, comm::Backend backend,
                         int device) {
  auto source = membership::FileMembershipSource::Start({dir + "/membership.json", 5ms, {}});
  if (!source.ok()) ::_exit(2);
  float value = 1;
  elastic::ElasticState state([&] { return std::string(reinterpret_cast<char*>(&value), sizeof value); },
                              [&](std::string_view b) {
                                std::memcpy(&value, b.data(), sizeof value);
                                return Status::Ok();
                              });
  elastic::ElasticOptions o;
  o.worker_id = id;
  o.secret = "bench-secret";
  o.store_port = port;
  o.rebuild_timeout = 20s;
  o.runtime.backend = backend;
  o.runtime.device = device;
  o.runtime.timeout = 20s;
  o.runtime.fusion_threshold_bytes = 0;
  if (std::getenv("RINGMASTER_BENCH_VERBOSE")) {
    o.log = [id](LogLevel, std::string_view line) {
      std::fprintf(stderr, "%.3f [%s] %.*s\n", NowNs() / 1e6, id.c_str(), static_cast<int>(line.size()), line.data());
    };
  }
  elastic::ElasticDriver driver(o, source->get(), &state);
  int64_t reported = 0;
  std::ofstream report(dir + "/report." + id, std::ios::app);
  // Under NCCL the allreduce's buffers are on the worker's GPU, which stays the same for its life.
  std::unique_ptr<memory::Memory> gpu;
  void* buffers = nullptr;
  auto step = [&](const elastic::StepContext& ctx) -> StatusOr<data::SampleCursor> {
    const int64_t step_start = NowNs();
    float host[2] = {1, 0};
    void *in = &host[0], *out = &host[1];
    if (ctx.rt->device() >= 0) {
      if (!gpu) {
        gpu = memory::NewMemoryFor(comm::MemoryKind::kCuda, ctx.rt->device());
        RINGMASTER_ASSIGN_OR_RETURN(buffers, gpu->Allocate(sizeof host));
        RINGMASTER_RETURN_IF_ERROR(gpu->Upload(buffers, host, sizeof host));
      }
      in = buffers;
      out = static_cast<char*>(buffers) + sizeof(float);
    }
    RINGMASTER_RETURN_IF_ERROR(ctx.rt->Allreduce("x", in, out, 1, common::DataType::kFloat32, common::ReduceOp::kSum));
    if (ctx.generation != reported) {
      reported = ctx.generation;
      elastic::RebuildStats s = driver.last_rebuild();
      report << ctx.generation << " " << step_start << " " << NowNs() << " " << s.detect << " " << s.rendezvous << " "
             << s.communicator << " " << s.restore << " " << (s.shrunk ? 1 : 0) << std::endl;
    }
    std::this_thread::sleep_for(2ms);
    return data::SampleCursor{0, static_cast<uint64_t>(ctx.step + 1)};
  };
  auto r = driver.Run(std::numeric_limits<int64_t>::max(), step);
  if (!r.ok()) std::fprintf(stderr, "[%s] %s\n", id.c_str(), r.status().ToString().c_str());
  ::_exit(r.ok() ? 0 : 1);
}

struct Proc {
  std::string id;
  pid_t pid;
  uint16_t port;
  int device;  // its GPU index under NCCL (% visible GPUs)
};

class Bench {
 public:
  Bench(std::string dir, comm::Backend backend) : dir_(std::move(dir)), backend_(backend) {}

  void Spawn() {
    // The lowest GPU index no live worker holds: the replacement takes the victim's (as ringmaster-run).
    int device = 0;
    while (std::any_of(procs_.begin(), procs_.end(), [&](const Proc& q) { return q.device == device; })) ++device;
    Proc p{"w" + std::to_string(next_++), 0, FreePort(&next_port_), device};
    std::fflush(nullptr);
    p.pid = ::fork();
    if (p.pid == 0) Worker(dir_, p.id, p.port, backend_, p.device);
    procs_.push_back(p);
  }
  void Publish() {
    api::Membership r;
    r.generation = ++gen_;
    for (size_t i = 0; i < procs_.size(); ++i) {
      r.members.push_back({procs_[i].id, "", static_cast<int32_t>(i), "127.0.0.1", "local"});
    }
    r.coordinator = api::CoordinatorAddress(r.members[0], procs_[0].port);
    (void)membership::WriteMembershipFile(dir_ + "/membership.json", r);
  }
  // Waits until every current worker reported generation gen_; returns the reports.
  std::vector<std::vector<double>> WaitReports() {
    for (;;) {
      std::vector<std::vector<double>> got;
      for (const auto& p : procs_) {
        std::ifstream in(dir_ + "/report." + p.id);
        std::string line;
        while (std::getline(in, line)) {
          std::istringstream f(line);
          std::vector<double> v(7);  // t_step_start, t_first, detect, rdzv, comm, restore, shrunk
          int64_t g;
          f >> g;
          for (auto& x : v) f >> x;
          if (g == gen_) got.push_back(v);
        }
      }
      if (got.size() == procs_.size()) return got;
      std::this_thread::sleep_for(2ms);
    }
  }
  void KillAll() {
    for (auto& p : procs_) ::kill(p.pid, SIGKILL);
    while (::waitpid(-1, nullptr, 0) > 0) {}
    procs_.clear();
  }

  std::string dir_;
  comm::Backend backend_;
  std::vector<Proc> procs_;
  int64_t gen_ = 0;
  int next_ = 0;
  int next_port_ = 20000 + static_cast<int>(::getpid() % 4096) * 2;  // apart from another bench's, most likely
};

// The q-quantile (nearest rank) of v; 0 when empty.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string LoadAverage() {
  double l[3] = {0, 0, 0};
  if (::getloadavg(l, 3) != 3) return "unknown";
  char b[64];
  std::snprintf(b, sizeof b, "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return b;
}

std::string DefaultDir() {
  std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                         : std::filesystem::temp_directory_path();
  return base / ("ringmaster-elastic-bench." + std::to_string(::getpid()));
}

struct Flags {
  std::vector<int> sizes = {2, 4, 8, 16, 32};
  int trials = 20;
  int large_trials = 5;
  std::vector<std::string> backends = {"gloo"};
  std::string dir = DefaultDir();
  std::string json;
  bool help = false;
};

std::unique_ptr<CLI::App> NewApp(Flags& f) {
  auto app = cli::NewApp("ringmaster-elastic-bench",
                         "ringmaster-elastic-bench: worker death -> next successful allreduce, by phase (Gloo on "
                         "loopback, or NCCL: revoke and shrink).");
  app->add_option("--sizes", f.sizes, "world sizes, comma-separated")->delimiter(',')->check(CLI::Range(2, 1024));
  app->add_option("--trials", f.trials, "trials per size up to 8 ranks")->check(CLI::Range(1, 1000000));
  app->add_option("--large-trials", f.large_trials, "trials per size above 8 ranks (slow on a small machine)")
      ->check(CLI::Range(1, 1000000));
  app->add_option("--backends", f.backends, "backends to measure in turn, comma-separated (gloo, nccl)")
      ->delimiter(',')
      ->check(CLI::IsMember({"gloo", "nccl"}));
  app->add_option("--out", f.dir, "scratch directory (removed at the end; default under /dev/shm)");
  app->add_option("--json", f.json, "also write the figures here, for make bench-report (bench/README.md)");
  return app;
}

std::string Usage() { return cli::UsageOf<Flags>(NewApp); }

StatusOr<Flags> ParseFlags(const std::vector<std::string>& args) {
  RINGMASTER_ASSIGN_OR_RETURN(Flags f, cli::ParseInto<Flags>(NewApp, args));
  if (!f.help && f.sizes.empty()) return InvalidArgumentError("--sizes: give at least one size");
  if (!f.help && f.backends.empty()) return InvalidArgumentError("--backends: give gloo, nccl or both");
  return f;
}

void PrintRow(const std::string& backend, int n, int trials, const char* stat, double q,
              const std::vector<std::vector<double>>& columns, double shrunk, double peer, double mesh,
              const std::string& load) {
  std::printf("%-7s %5d %6d %4s", backend.c_str(), n, trials, stat);
  for (const auto& c : columns) std::printf(" %9.2f", Quantile(c, q));
  const double comm = Quantile(columns.back(), q);
  std::printf(" %6.2f %9.2f %9.2f %6.2f  %s\n", shrunk, peer, mesh, peer > 0 ? comm / peer : 0.0, load.c_str());
}

// The figures of one size for --json: the median total (goals: <= 30 ms at 8 ranks, <= 150 ms at 32), our communicator
// phase against bare Gloo's connect (goal: <= 1.5x), and the phase medians and p90s for the report's plot. The NCCL
// rows carry no goal: on the emulation they measure our protocol over host sockets, not NCCL.
void Record(Report& report, const std::string& backend, int n, int trials,
            const std::vector<std::vector<double>>& columns, double shrunk, const std::vector<double>& connects,
            const std::vector<double>& meshes, const std::string& load) {
  const std::string ranks = std::to_string(n);
  const bool gloo = backend == "gloo";
  const std::string id = gloo ? "runtime." : "runtime." + backend + ".";
  const char* emulated = std::getenv("RINGMASTER_EMULATED_GPUS");
  const std::string on = gloo ? "" : emulated ? " (NCCL, CPU emulation)" : " (NCCL)";
  std::optional<Goal> total_goal;
  if (n == 8 && gloo) total_goal = OursAtMost(30, "<= 30 ms at 8 ranks");  // issue 33
  if (n == 32 && gloo) total_goal = OursAtMost(150, "<= 150 ms at 32 ranks");
  report.Figure(id + "total." + ranks, "worker death -> next allreduce, " + ranks + " ranks (median)" + on, "ms",
                Quantile(columns[0], 0.5), std::nullopt, "", total_goal)["load"] = load;
  std::optional<double> peer;
  if (!connects.empty()) peer = Quantile(connects, 0.5);
  std::optional<Goal> ratio_goal;
  if (gloo) ratio_goal = RatioAtMost(1.5, "<= 1.5x Gloo");
  auto& comm = report.Figure(id + "comm_vs_gloo." + ranks,
                             "communicator phase vs bare Gloo connect, " + ranks + " ranks (median)" + on, "ms",
                             Quantile(columns.back(), 0.5), peer, "bare Gloo connect", ratio_goal);
  comm["load"] = load;
  if (!gloo) comm["shrunk_fraction"] = shrunk;
  if (!peer) comm["note"] = "the Gloo peer failed";
  static const char* const kNames[] = {"total",        "notice",  "detect",          "rendezvous",
                                       "communicator", "restore", "first_allreduce", "comm_rank"};
  nlohmann::json median, p90;
  for (size_t i = 0; i < columns.size(); ++i) {
    median[kNames[i]] = Quantile(columns[i], 0.5);
    p90[kNames[i]] = Quantile(columns[i], 0.9);
  }
  report.Series(gloo ? "recovery_phases" : "recovery_phases_" + backend)
      .push_back({{"ranks", n},
                  {"trials", trials},
                  {"median_ms", median},
                  {"p90_ms", p90},
                  {"gloo_connect_ms",
                   peer ? nlohmann::json({{"median", *peer}, {"p90", Quantile(connects, 0.9)}}) : nlohmann::json()},
                  {"mesh_connect_ms",
                   !meshes.empty() ? nlohmann::json({{"median", Quantile(meshes, 0.5)}, {"p90", Quantile(meshes, 0.9)}})
                                   : nlohmann::json()},
                  {"load", load}});
}

int Main(int argc, char** argv) {
  auto flags = ParseFlags(cli::Args(argc, argv));
  if (auto exit_code = cli::ExitEarly("ringmaster-elastic-bench", flags, Usage)) return *exit_code;
  const std::string dir = flags->dir;
  Report report("runtime", argc, argv);
  const bool verbose = std::getenv("RINGMASTER_BENCH_VERBOSE") != nullptr;
  const char* emulated = std::getenv("RINGMASTER_EMULATED_GPUS");
  std::printf(
      "death of one worker -> next successful allreduce on loopback, %d cores%s; ms; load average at "
      "start %s\n",
      static_cast<int>(std::thread::hardware_concurrency()),
      emulated ? (std::string("; NCCL is the CPU emulation (RINGMASTER_EMULATED_GPUS=") + emulated + ")").c_str() : "",
      LoadAverage().c_str());
  std::printf("%-7s %5s %6s %4s %9s %9s %9s %9s %9s %9s %9s %9s %6s %9s %9s %6s  %s\n", "backend", "ranks", "trials",
              "stat", "total", "notice", "detect", "rendezv", "commun", "restore", "1st-allr", "comm-rank", "shrunk",
              "gloo-conn", "ours-conn", "ratio", "load average (1/5/15 min)");
  for (int n : flags->sizes) {
    std::vector<double> connects, meshes;  // the peer and our connect alone, measured once per size
    bool peer_measured = false;
    for (const std::string& backend_name : flags->backends) {
      const comm::Backend backend = backend_name == "nccl" ? comm::Backend::kNccl : comm::Backend::kGloo;
      const int trials = n > 8 ? flags->large_trials : flags->trials;
      std::filesystem::remove_all(dir);
      std::filesystem::create_directories(dir);
      Bench b(dir, backend);
      for (int i = 0; i < n; ++i) b.Spawn();
      b.Publish();
      b.WaitReports();
      std::vector<double> total, notice, detect, rdzv, comm, restore, first, comm_slowest;
      double shrunk_rebuilds = 0, rebuilds = 0;
      for (int t = 0; t < trials; ++t) {
        std::this_thread::sleep_for(20ms);
        Proc victim = b.procs_.back();
        const int64_t killed = NowNs();
        ::kill(victim.pid, SIGKILL);
        ::waitpid(victim.pid, nullptr, 0);
        b.procs_.pop_back();
        b.Publish();
        const int64_t published = NowNs();
        if (verbose) {
          std::fprintf(stderr, "%.3f [bench] killed %s at %.3f; generation %lld published\n", published / 1e6,
                       victim.id.c_str(), killed / 1e6, static_cast<long long>(b.gen_));
        }
        auto reports = b.WaitReports();
        // The critical path: each phase ends when its slowest survivor ends it, so the columns sum to the total.
        // A rank's phase ends follow backwards from its step start: restore ends there, the communicator before it...
        double end_detect = 0, end_rdzv = 0, end_comm = 0, end_restore = 0, end_first = 0, slowest_comm = 0;
        for (const auto& v : reports) {
          const double step_start = v[0], done = v[1];
          const double restore_end = step_start, comm_end = restore_end - v[5] * 1e9, rdzv_end = comm_end - v[4] * 1e9,
                       detect_end = rdzv_end - v[3] * 1e9;
          end_detect = std::max(end_detect, detect_end);
          end_rdzv = std::max(end_rdzv, rdzv_end);
          end_comm = std::max(end_comm, comm_end);
          end_restore = std::max(end_restore, restore_end);
          end_first = std::max(end_first, done);
          slowest_comm = std::max(slowest_comm, v[4] * 1e3);
          shrunk_rebuilds += v[6];
          rebuilds += 1;
        }
        // Boundaries never go back in time (a rank may have finished a phase before the record was published).
        std::vector<double> bounds = {static_cast<double>(killed),
                                      static_cast<double>(published),
                                      end_detect,
                                      end_rdzv,
                                      end_comm,
                                      end_restore,
                                      end_first};
        for (size_t i = 1; i < bounds.size(); ++i) bounds[i] = std::max(bounds[i], bounds[i - 1]);
        const double tot = (bounds.back() - bounds.front()) / 1e6;
        total.push_back(tot);
        notice.push_back((bounds[1] - bounds[0]) / 1e6);
        detect.push_back((bounds[2] - bounds[1]) / 1e6);
        rdzv.push_back((bounds[3] - bounds[2]) / 1e6);
        comm.push_back((bounds[4] - bounds[3]) / 1e6);
        restore.push_back((bounds[5] - bounds[4]) / 1e6);
        first.push_back((bounds[6] - bounds[5]) / 1e6);
        comm_slowest.push_back(slowest_comm);
        b.Spawn();  // back to n (not measured)
        b.Publish();
        b.WaitReports();
        if (n > 8 || backend != comm::Backend::kGloo) {
          std::fprintf(stderr, "  %s, %d ranks: trial %d/%d done (%.1f ms)\n", backend_name.c_str(), n, t + 1, trials,
                       tot);
        }
      }
      b.KillAll();
      if (!peer_measured) {
        // The peer: the rebuilt world's n-1 processes connecting bare Gloo, as many trials.
        peer_measured = true;
        auto peer = MeasureConnects(n - 1, trials, 60s);
        if (!peer.ok()) std::fprintf(stderr, "gloo peer at %d ranks: %s\n", n - 1, peer.status().ToString().c_str());
        if (peer.ok()) {
          connects = peer->gloo;
          meshes = peer->ours;
        }
      }
      const std::vector<std::vector<double>> columns = {total, notice,  detect, rdzv,
                                                        comm,  restore, first,  comm_slowest};
      const double shrunk = rebuilds > 0 ? shrunk_rebuilds / rebuilds : 0;
      const std::string load = LoadAverage();
      PrintRow(backend_name, n, trials, "med", 0.5, columns, shrunk, Quantile(connects, 0.5), Quantile(meshes, 0.5),
               load);
      PrintRow(backend_name, n, trials, "p90", 0.9, columns, shrunk, Quantile(connects, 0.9), Quantile(meshes, 0.9),
               load);
      std::fflush(stdout);
      Record(report, backend_name, n, trials, columns, shrunk, connects, meshes, load);
    }
  }
  std::printf(
      "total = notice + detect + rendezv + commun + restore + 1st-allr, the critical path: each phase ends when\n"
      "its slowest survivor ends it. notice: kill -> membership published (the launcher's waitpid and record);\n"
      "detect: -> every survivor started its rebuild (includes reading the record); rendezv, commun, restore: the\n"
      "rebuild's phases; 1st-allr: -> every survivor finished its first training allreduce. comm-rank: the\n"
      "slowest survivor's own communicator phase; gloo-conn: bare Gloo's TCP device + connectFullMesh of\n"
      "ranks-1 processes over the same store, the slowest rank's, same trials; ours-conn: the same processes'\n"
      "TCP device + our parallel connect (ConnectMesh), alternating with Gloo's; ratio: comm-rank / gloo-conn\n"
      "(each row's quantile). Each column is its own quantile, so a row's columns need not sum to its total.\n"
      "Rows above 8 ranks use --large-trials. Under NCCL, detect includes revoking the survivors' in-flight\n"
      "allreduce and commun is the shrink when `shrunk` (the fraction of survivors' rebuilds that shrank) is 1.\n");
  std::filesystem::remove_all(dir);
  return report.Write(flags->json) ? 0 : 1;
}

}  // namespace
}  // namespace ringmaster::bench

int main(int argc, char** argv) { return ringmaster::bench::Main(argc, argv); }
