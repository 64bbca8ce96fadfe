// ringmaster-operator-bench: the operator at scale on the local control plane (a program that prints
// figures; not a test). It starts its own cluster with N fake 8-GPU nodes, runs ringmaster-operator,
// applies J TrainingJobs of W one-GPU workers, and measures
//   - time from apply to every job's first membership with W workers,
//   - apiserver requests the operator made per job (its rest_client_requests_total),
//   - the operator's peak RSS and CPU seconds,
//   - time from a worker's failure (KWOK fails the pod) to the new generation in status, p50/p99,
//   - the cost of a Prometheus scrape of the operator's /metrics with every job published: duration
//     (curl's total, p50/p99 of 20) and bytes (the jobs' state is computed from the cache at each scrape).
//
//   ringmaster-operator-bench [--jobs 200] [--workers 8] [--nodes 200] [--failures 100] [--keep-cluster]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cli.h"
#include "support/manifests.h"
#include "support/background_process.h"
#include "support/subprocess.h"
#include "support/test_cluster.h"

namespace rt = ringmaster::testing;
using json = nlohmann::json;
using ringmaster::Status;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

namespace {

struct Options {
  int jobs = 200, workers = 8, nodes = 200, failures = 100;
  bool keep_cluster = false;
  bool help = false;
};

std::unique_ptr<CLI::App> NewApp(Options& o) {
  auto app = ringmaster::cli::NewApp(
      "ringmaster-operator-bench",
      "ringmaster-operator-bench: the operator against a local control plane with many simulated GPU nodes:\n"
      "jobs reconciled per second and pod failure -> new generation latency.");
  app->add_option("--jobs", o.jobs, "TrainingJobs to create")->check(CLI::Range(1, 1000000));
  app->add_option("--workers", o.workers, "workers per job")->check(CLI::Range(1, 100000));
  app->add_option("--nodes", o.nodes, "simulated GPU nodes")->check(CLI::Range(1, 1000000));
  app->add_option("--failures", o.failures, "pod failures to inject")->check(CLI::Range(0, 1000000));
  app->add_flag("--keep-cluster", o.keep_cluster, "leave the cluster running at the end");
  return app;
}

std::string Usage() { return ringmaster::cli::UsageOf<Options>(NewApp); }

ringmaster::StatusOr<Options> ParseOptions(const std::vector<std::string>& args) {
  return ringmaster::cli::ParseInto<Options>(NewApp, args);
}

void Say(const std::string& s) {
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
}

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Reads /proc/<pid>: peak RSS (MiB) and CPU seconds.
std::pair<double, double> ProcessUsage(pid_t pid) {
  double rss_mib = 0, cpu = 0;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) rss_mib = std::stod(line.substr(6)) / 1024.0;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), {});
  auto close = all.rfind(')');
  std::istringstream fields(all.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(fields)), {});
  if (f.size() > 13) cpu = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return {rss_mib, cpu};
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

int Run(const Options& o) {
  const std::string dir = "/tmp/ringmaster-operator-bench-" + std::to_string(getpid());
  const std::string script = std::string(RINGMASTER_SOURCE_DIR) + "/tests/harness/cluster/cluster.sh";
  Say("bench: starting a control plane with " + std::to_string(o.nodes) + " fake nodes x 8 GPUs in " + dir);
  auto up = rt::RunCommand({script, "up", "--dir", dir, "--nodes", std::to_string(o.nodes), "--gpus-per-node", "8"},
                           std::chrono::minutes(5));
  if (!up.ok() || !up->ok()) {
    std::fprintf(stderr, "bench: cluster up failed: %s\n", up.ok() ? up->err.c_str() : up.status().ToString().c_str());
    return 1;
  }
  setenv("RINGMASTER_TEST_CLUSTER_DIR", dir.c_str(), 1);
  auto cluster = rt::TestCluster::FromEnvironment();
  auto down = [&] {
    if (!o.keep_cluster) (void)rt::RunCommand({script, "down", "--dir", dir}, std::chrono::minutes(2));
  };
  if (!cluster.ok()) {
    down();
    return 1;
  }
  (void)cluster->EnsureCrd(ringmaster::testing::TrainingJobCrdPath(),
                           std::string(ringmaster::api::kCrdName));
  (void)cluster->Kubectl({"create", "namespace", "bench"});
  (void)rt::WaitFor("default SA", seconds(60), [&](std::string*) {
    auto r = cluster->Kubectl({"get", "sa", "default", "-n", "bench"});
    return r.ok() && r->ok();
  });

  rt::BackgroundProcess op;
  const std::string log = dir + "/operator.log";
  Status started = op.Start({RINGMASTER_OPERATOR_BIN, "--kubeconfig", cluster->kubeconfig(), "--namespace", "bench",
                             "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0",
                             "--kube-api-qps", "200", "--kube-api-burst", "400", "--workers", "8"},
                            log);
  std::string metrics_port;
  (void)rt::WaitFor("operator metrics port", seconds(30), [&](std::string*) {
    std::smatch m;
    std::string l = op.Log();
    if (std::regex_search(l, m, std::regex("serving metrics on .* \\(port ([0-9]+)\\)"))) metrics_port = m[1];
    return !metrics_port.empty() && l.find("caches synced") != std::string::npos;
  });
  if (!started.ok() || metrics_port.empty()) {
    std::fprintf(stderr, "bench: operator did not start:\n%s\n", op.Log().c_str());
    down();
    return 1;
  }

  // 1. Apply every job at once, then wait for every membership.
  std::string manifest;
  for (int j = 0; j < o.jobs; ++j) {
    manifest += "---\n" + ringmaster::testing::TrainingJobHead() + "metadata: {name: job-" + std::to_string(j) +
                ", namespace: bench}\nspec:\n  replicas: {min: " + std::to_string(o.workers) + ", max: " +
                std::to_string(o.workers) + "}\n  elasticPolicy: {joinBatchWindowSeconds: 1}\n  template:\n    spec:\n"
                "      containers:\n      - {name: t, image: example/trainer:1, resources: {limits: {nvidia.com/gpu: 1}}}\n";
  }
  Say("bench: applying " + std::to_string(o.jobs) + " jobs x " + std::to_string(o.workers) + " workers");
  auto t0 = Clock::now();
  auto applied = cluster->Kubectl({"apply", "-f", "-"}, manifest, std::chrono::minutes(5));
  if (!applied.ok() || !applied->ok()) {
    std::fprintf(stderr, "bench: apply failed\n");
    down();
    return 1;
  }
  int published = 0;
  double last_report = 0;
  Status all = rt::WaitFor("every membership", std::chrono::minutes(20), [&](std::string* last) {
    auto list = cluster->KubectlJson({"get", "tj", "-n", "bench"});
    if (!list.ok()) return false;
    published = 0;
    for (const auto& j : (*list)["items"])
      published += j.value("status", json::object()).value("membership", json::object()).value("worldSize", 0) == o.workers;
    *last = std::to_string(published) + " published";
    if (Since(t0) - last_report >= 10) {
      last_report = Since(t0);
      Say("bench:   " + std::to_string(published) + "/" + std::to_string(o.jobs) + " memberships after " +
          std::to_string(static_cast<int>(last_report)) + " s");
    }
    return published == o.jobs;
  }, std::chrono::milliseconds(500));
  double apply_to_published = Since(t0);
  if (!all.ok()) Say("bench: " + all.ToString());

  auto metrics = rt::RunCommand({"curl", "-s", "http://127.0.0.1:" + metrics_port + "/metrics"});
  double requests = 0;
  if (metrics.ok()) {
    std::istringstream in(metrics->out);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("rest_client_requests_total{", 0) == 0) requests += std::stod(line.substr(line.rfind(' ') + 1));
  }
  auto [rss, cpu] = ProcessUsage(op.pid());
  std::vector<double> scrape_seconds;
  double scrape_bytes = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = rt::RunCommand({"curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download}",
                             "http://127.0.0.1:" + metrics_port + "/metrics"});
    if (!r.ok() || !r->ok()) continue;
    std::istringstream in(r->out);
    double t = 0;
    in >> t >> scrape_bytes;
    scrape_seconds.push_back(t);
  }

  // 2. Failure -> new generation, one at a time.
  Say("bench: failing " + std::to_string(o.failures) + " workers one at a time");
  std::vector<double> latencies;
  for (int i = 0; i < o.failures && all.ok(); ++i) {
    std::string name = "job-" + std::to_string(i % o.jobs);
    auto job = cluster->KubectlJson({"get", "tj", name, "-n", "bench"});
    if (!job.ok()) continue;
    const json m = (*job)["status"]["membership"];
    int64_t gen = m.value("generation", int64_t{0});
    std::string pod = m["members"][m["members"].size() - 1].value("pod", "");
    auto t = Clock::now();
    (void)cluster->Kubectl({"label", "pod", pod, "-n", "bench", "pod-container-running-failed.stage.kwok.x-k8s.io=true"});
    Status s = rt::WaitFor("generation > " + std::to_string(gen), seconds(60), [&](std::string*) {
      auto r = cluster->Kubectl({"get", "tj", name, "-n", "bench", "-o", "jsonpath={.status.membership.generation}"});
      return r.ok() && r->ok() && !r->out.empty() && std::stoll(r->out) > gen;
    }, std::chrono::milliseconds(20));
    if (s.ok()) latencies.push_back(Since(t));
    if ((i + 1) % 20 == 0) Say("bench:   " + std::to_string(i + 1) + " failures measured");
  }

  char buf[1024];
  Say("");
  Say("ringmaster-operator at scale (" + std::to_string(o.jobs) + " jobs x " + std::to_string(o.workers) + " workers, " +
      std::to_string(o.nodes) + " nodes x 8 GPUs, 2-core machine shared with the control plane)");
  std::snprintf(buf, sizeof(buf), "  apply -> every membership published : %.1f s (%d/%d jobs)", apply_to_published,
                published, o.jobs);
  Say(buf);
  std::snprintf(buf, sizeof(buf), "  apiserver requests per job          : %.1f (%.0f total)", requests / o.jobs, requests);
  Say(buf);
  std::snprintf(buf, sizeof(buf), "  /metrics scrape                     : p50 %.1f ms, p99 %.1f ms, %.0f bytes (%.1f KiB)",
                Percentile(scrape_seconds, 0.5) * 1e3, Percentile(scrape_seconds, 0.99) * 1e3, scrape_bytes,
                scrape_bytes / 1024);
  Say(buf);
  std::snprintf(buf, sizeof(buf), "  operator peak RSS                   : %.1f MiB", rss);
  Say(buf);
  std::snprintf(buf, sizeof(buf), "  operator CPU seconds (to published) : %.1f s", cpu);
  Say(buf);
  std::snprintf(buf, sizeof(buf),
                "  pod failure -> new generation        : p50 %.3f s, p99 %.3f s over %zu failures "
                "(includes kubectl polling at 20 ms)",
                Percentile(latencies, 0.5), Percentile(latencies, 0.99), latencies.size());
  Say(buf);
  Say("  peer: none measured (Kubeflow's training-operator v1 restarts every pod on a failure and has no membership)");
  op.Stop();
  down();
  return all.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = ParseOptions(ringmaster::cli::Args(argc, argv));
  if (auto exit_code = ringmaster::cli::ExitEarly("ringmaster-operator-bench", options, Usage)) return *exit_code;
  return Run(*options);
}
