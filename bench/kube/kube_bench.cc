// ringmaster-kube-bench: list+watch of many pods on a real apiserver through the informer.
//
//   ringmaster-kube-bench --kubeconfig build/cluster/kubeconfig [--pods 10000] [--concurrency 32]
//                         [--kubectl PATH] [--keep] [--strip-managed-fields]
//
// Creates --pods pods (bounded concurrency; schedulerName points nowhere so nothing churns) in a fresh
// namespace, then prints: creation rate; informer time to sync; memory per cached object; events per
// second delivered to the informer while every pod is patched; raw watch replay rate; and, with
// --kubectl, kubectl's time to list the same pods as JSON (client-go, as a peer). Deletes the
// namespace at the end unless --keep.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "kube/api_error.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"

namespace ringmaster::bench {
namespace {

using namespace ringmaster::kube;
using Clock = std::chrono::steady_clock;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Bytes of heap in use (glibc), which unlike RSS does not count freed-but-retained arena memory.
long HeapInUse() {
  struct mallinfo2 mi = mallinfo2();
  return static_cast<long>(mi.uordblks + mi.hblkhd);
}

long RssBytes() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  statm >> pages_total >> pages_rss;
  return pages_rss * sysconf(_SC_PAGESIZE);
}

// Runs fn(i) for i in [0, n) on `threads` threads; returns the number of failures.
int ParallelFor(int n, int threads, const std::function<bool(int)>& fn, const char* what) {
  std::atomic<int> next{0}, failures{0}, done{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        if (!fn(i)) failures++;
        int d = ++done;
        if (d % 1000 == 0) std::printf("  %s: %d/%d\n", what, d, n), std::fflush(stdout);
      }
    });
  }
  for (auto& t : pool) t.join();
  return failures;
}

// The command line, parsed once (base/cli.h).
struct BenchFlags {
  std::string kubeconfig, kubectl;
  int pods = 10000, concurrency = 32;
  bool keep = false, strip = false;
  bool help = false;
};

std::unique_ptr<CLI::App> NewBenchApp(BenchFlags& f) {
  auto app = cli::NewApp("ringmaster-kube-bench",
                         "ringmaster-kube-bench: list+watch of many pods on a real apiserver through the informer.");
  app->add_option("--kubeconfig", f.kubeconfig, "kubeconfig of the cluster (default: $KUBECONFIG)");
  app->add_option("--pods", f.pods, "pods to create")->check(CLI::Range(1, 10000000));
  app->add_option("--concurrency", f.concurrency, "requests in flight while creating")->check(CLI::Range(1, 10000));
  app->add_option("--kubectl", f.kubectl, "kubectl to time the same list with (a peer); none when empty");
  app->add_flag("--keep", f.keep, "keep the namespace at the end");
  app->add_flag("--strip-managed-fields", f.strip, "drop metadata.managedFields from cached objects");
  return app;
}

std::string BenchUsage() { return cli::UsageOf<BenchFlags>(NewBenchApp); }

StatusOr<BenchFlags> ParseBenchFlags(const std::vector<std::string>& args) {
  return cli::ParseInto<BenchFlags>(NewBenchApp, args);
}

int Main(int argc, char** argv) {
  auto flags = ParseBenchFlags(cli::Args(argc, argv));
  if (auto exit_code = cli::ExitEarly("ringmaster-kube-bench", flags, BenchUsage)) return *exit_code;
  const std::string kubeconfig = flags->kubeconfig, kubectl = flags->kubectl;
  const int pods = flags->pods, concurrency = flags->concurrency;
  const bool keep = flags->keep, strip = flags->strip;
  auto cfg = LoadConfig(kubeconfig, "", ProcessEnvironment());
  if (!cfg.ok()) {
    std::fprintf(stderr, "config: %s\n", cfg.status().ToString().c_str());
    return 1;
  }
  cfg->qps = 0;  // measure the apiserver and the client, not our own limiter
  auto client_or = NewClient(*cfg);
  if (!client_or.ok()) {
    std::fprintf(stderr, "client: %s\n", client_or.status().ToString().c_str());
    return 1;
  }
  auto client = *client_or;
  const std::string ns = "kube-bench-" + std::to_string(::getpid());
  auto created_ns = client->Create(resources::Namespaces(), "",
                                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (!created_ns.ok()) {
    std::fprintf(stderr, "namespace: %s\n", created_ns.status().ToString().c_str());
    return 1;
  }
  std::printf("ringmaster-kube-bench: %d pods in namespace %s, concurrency %d, server %s\n", pods, ns.c_str(),
              concurrency, cfg->server.c_str());

  // 1. Create.
  auto t0 = Clock::now();
  int failed = ParallelFor(
      pods, concurrency,
      [&](int i) {
        json pod = {
            {"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", "p-" + std::to_string(i)}, {"labels", {{"app", "bench"}, {"shard", std::to_string(i % 16)}}}}},
            {"spec",
             {{"schedulerName", "ringmaster-bench-nobody"},
              {"containers", json::array({{{"name", "main"},
                                           {"image", "ringmaster.io/bench:none"},
                                           {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}})}}}};
        auto r = client->Create(resources::Pods(), ns, pod);
        if (!r.ok() && !IsAlreadyExists(r.status())) {
          std::fprintf(stderr, "  create p-%d: %s\n", i, r.status().ToString().c_str());
          return false;
        }
        return true;
      },
      "created");
  double create_s = Secs(Clock::now() - t0);
  std::printf("create: %d pods in %.2f s = %.0f pods/s (%d failed)\n", pods, create_s, pods / create_s, failed);

  // 2. Informer sync (paginated list of 500) and memory.
  malloc_trim(0);
  long rss_before = RssBytes();
  long heap_before = HeapInUse();
  InformerOptions io;
  io.ns = ns;
  io.page_size = 500;
  if (strip) io.transform = StripManagedFields;
  Informer informer(client, resources::Pods(), io);
  std::atomic<int64_t> updates{0};
  EventHandler h;
  h.on_update = [&](const json&, const json&) { updates++; };
  informer.AddEventHandler(h);
  t0 = Clock::now();
  informer.Start();
  if (!informer.WaitForSync(std::chrono::minutes(5))) {
    std::fprintf(stderr, "informer did not sync\n");
    return 1;
  }
  double sync_s = Secs(Clock::now() - t0);
  malloc_trim(0);
  long rss_after = RssBytes();
  long heap_after = HeapInUse();
  size_t cached = informer.store().Size();
  size_t json_bytes = 0;
  for (const auto& o : informer.store().List()) json_bytes += o->dump().size();
  std::printf("informer sync%s: %zu pods in %.2f s = %.0f objects/s\n", strip ? " (managedFields stripped)" : "",
              cached, sync_s, cached / sync_s);
  std::printf(
      "memory: heap in use +%.1f MiB for %zu cached pods = %.0f bytes/object (RSS +%.1f MiB; serialized JSON %.0f "
      "bytes/object)\n",
      (heap_after - heap_before) / 1048576.0, cached, double(heap_after - heap_before) / double(cached),
      (rss_after - rss_before) / 1048576.0, double(json_bytes) / double(cached));
  const std::string list_rv = informer.LastSyncResourceVersion();

  // 3. Events through the informer while every pod is patched.
  t0 = Clock::now();
  failed = ParallelFor(
      pods, concurrency,
      [&](int i) {
        auto r = client->Patch(resources::Pods(), ns, "p-" + std::to_string(i), PatchType::kMerge,
                               {{"metadata", {{"labels", {{"patched", "yes"}}}}}});
        return r.ok();
      },
      "patched");
  double patch_s = Secs(Clock::now() - t0);
  while (updates.load() < pods && Secs(Clock::now() - t0) < 300)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double events_s = Secs(Clock::now() - t0);
  std::printf(
      "patch: %d pods in %.2f s = %.0f writes/s (%d failed); informer saw %lld updates in %.2f s = %.0f events/s\n",
      pods, patch_s, pods / patch_s, failed, static_cast<long long>(updates.load()), events_s,
      updates.load() / events_s);
  informer.Stop();

  // 4. Raw watch replay: the apiserver's watch cache sends every patch event as fast as we read.
  WatchOptions wo;
  wo.resource_version = list_rv;
  wo.allow_bookmarks = false;
  wo.timeout_seconds = 120;
  auto watch = client->Watch(resources::Pods(), ns, wo);
  if (watch.ok()) {
    t0 = Clock::now();
    int64_t n = 0;
    while (n < pods) {
      auto ev = (*watch)->Next();
      if (!ev.ok() || !ev->has_value()) {
        std::fprintf(stderr, "watch replay stopped after %lld events: %s\n", static_cast<long long>(n),
                     ev.ok() ? "end of stream" : ev.status().ToString().c_str());
        break;
      }
      ++n;
    }
    double replay_s = Secs(Clock::now() - t0);
    std::printf("watch replay: %lld events in %.2f s = %.0f events/s\n", static_cast<long long>(n), replay_s,
                n / replay_s);
    (*watch)->Stop();
  } else {
    std::fprintf(stderr, "watch replay: %s\n", watch.status().ToString().c_str());
  }

  // 5. Peer: client-go (kubectl) listing the same pods, vs our paginated ListAll.
  ListOptions lo;
  lo.limit = 500;
  t0 = Clock::now();
  auto all = client->ListAll(resources::Pods(), ns, lo);
  double ours_s = Secs(Clock::now() - t0);
  std::printf("list (ringmaster, pages of 500): %zu pods in %.2f s\n", all.ok() ? (*all)["items"].size() : 0, ours_s);
  if (!kubectl.empty()) {
    std::string cmd =
        kubectl + " --kubeconfig " +
        (kubeconfig.empty() ? std::string(std::getenv("KUBECONFIG") ? std::getenv("KUBECONFIG") : "") : kubeconfig) +
        " get pods -n " + ns + " -o json --chunk-size=500 > /dev/null";
    t0 = Clock::now();
    int rc = std::system(cmd.c_str());
    double peer_s = Secs(Clock::now() - t0);
    std::printf("list (kubectl/client-go, chunks of 500, -o json): %.2f s (rc %d); ratio ringmaster/kubectl = %.2f\n",
                peer_s, rc, ours_s / peer_s);
  }

  if (!keep) {
    DeleteOptions d;
    d.propagation_policy = "Background";
    (void)client->Delete(resources::Namespaces(), "", ns, d);
    std::printf("deleted namespace %s\n", ns.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace ringmaster::bench

int main(int argc, char** argv) { return ringmaster::bench::Main(argc, argv); }
