// ringmaster-agreement-bench: what the commit agreement (worker-runtime/README.md, "Commit agreement") costs a
// training step, at 2, 4 and 8 ranks. A benchmark that prints figures, not a test.
//
// Each size forks N ranks on loopback (runtime/local_ranks.h) over one Gloo runtime. A step is --step-ms of
// compute (a sleep), then the step's gradient allreduce (--grad-floats float32, negotiated on the world engine
// like Horovod's allreduce), then, in the agreeing rounds, exactly what ElasticDriver::Commit adds on the training
// thread: wait until the previous step is agreed, Runtime::Health, Vote, and the vote task (AgreeAsync). Rounds of
// --steps steps alternate plain and agreeing, so both see the same machine; the figure is the median over rounds
// of (agreeing step - plain step), in microseconds and as a share of the plain step (goal: <= 1 %).
// --submission-order puts the gradient on a set in submission order (DDP's process group): the world engine then
// negotiates only the votes, and each commit waits for the previous step's.
// The peer is the same loop without the agreement: what the step costs anyway.
//
//   ringmaster-agreement-bench [--sizes 2,4,8] [--step-ms 10] [--steps 100] [--rounds 6] [--json PATH]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "bench/bench_json.h"
#include "worker-runtime/runtime/local_ranks.h"
#include "worker-runtime/runtime/runtime.h"

namespace ringmaster::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::vector<int> sizes = {2, 4, 8};
  int step_ms = 10;
  int steps = 100;
  int rounds = 6;
  int grad_floats = 1024;
  bool submission_order = false;
  std::string json;
  bool help = false;
};

std::unique_ptr<CLI::App> NewApp(Flags& f) {
  auto app = cli::NewApp("ringmaster-agreement-bench",
                         "ringmaster-agreement-bench: the commit agreement's cost per training step (a step of "
                         "--step-ms compute and one negotiated allreduce), agreeing and plain rounds alternating.");
  app->add_option("--sizes", f.sizes, "world sizes, comma-separated")->delimiter(',')->check(CLI::Range(2, 64));
  app->add_option("--step-ms", f.step_ms, "compute per step (a sleep), ms")->check(CLI::Range(0, 10000));
  app->add_option("--steps", f.steps, "steps per round")->check(CLI::Range(1, 100000));
  app->add_option("--rounds", f.rounds, "rounds of each kind (the median is printed)")->check(CLI::Range(1, 1000));
  app->add_option("--grad-floats", f.grad_floats, "float32 elements of the step's allreduce")
      ->check(CLI::Range(1, 1 << 26));
  app->add_flag("--submission-order", f.submission_order,
                "the gradient's allreduce on a set in submission order (DDP's process group): the world negotiates "
                "nothing but the votes");
  app->add_option("--json", f.json, "also write the figures here, for make bench-report (bench/README.md)");
  return app;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One rank: rounds of plain and agreeing steps; rank 0 writes "plain_us agree_us" per round pair to `out`.
int RunRank(runtime::RankContext& ctx, const Flags& f, const std::string& out) {
  runtime::RuntimeConfig config;
  config.backend = comm::Backend::kGloo;
  config.name = "agreement";
  auto rt = runtime::Runtime::Create(config, ctx.store, ctx.rank, ctx.size);
  if (!rt.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", ctx.rank, rt.status().ToString().c_str());
    return 1;
  }
  std::vector<float> grad(static_cast<size_t>(f.grad_floats), 1.0f);
  int set = runtime::kWorldSet;
  if (f.submission_order) {
    std::vector<int> all(ctx.size);
    for (int r = 0; r < ctx.size; ++r) all[r] = r;
    auto added = (*rt)->AddProcessSet(all, fusion::Ordering::kSubmissionOrder);
    if (!added.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", ctx.rank, added.status().ToString().c_str());
      return 1;
    }
    set = *added;
  }
  int64_t step = 0;
  fusion::Handle vote;
  auto run_round = [&](bool agree) -> StatusOr<double> {
    const auto start = Clock::now();
    for (int i = 0; i < f.steps; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(f.step_ms));
      RINGMASTER_RETURN_IF_ERROR((*rt)->Allreduce("grad", grad.data(), grad.data(), grad.size(),
                                                  common::DataType::kFloat32, common::ReduceOp::kAvg, set));
      if (!agree) continue;
      ++step;
      if ((*rt)->Agreed() < step - 1 && step > 1) RINGMASTER_RETURN_IF_ERROR(vote.Wait());
      RINGMASTER_RETURN_IF_ERROR((*rt)->Health());
      (*rt)->Vote(step);
      vote = (*rt)->AgreeAsync(step);
    }
    if (agree) RINGMASTER_RETURN_IF_ERROR(vote.Wait());  // not counted as a step: the round's end
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / f.steps;
  };
  std::ofstream file;
  if (ctx.rank == 0) file.open(out);
  for (int r = 0; r < f.rounds; ++r) {
    // Which kind goes first alternates, so neither always follows the other.
    double us[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool agree = (r + k) % 2 == 1;
      auto t = run_round(agree);
      if (!t.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", ctx.rank, t.status().ToString().c_str());
        return 1;
      }
      us[agree ? 1 : 0] = *t;
    }
    if (ctx.rank == 0) file << us[0] << " " << us[1] << "\n";
  }
  return 0;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

int Main(int argc, char** argv) {
  auto flags = cli::ParseInto<Flags>(NewApp, cli::Args(argc, argv));
  if (auto exit_code = cli::ExitEarly<Flags>("ringmaster-agreement-bench", flags, NewApp)) return *exit_code;
  Report report("agreement", argc, argv);
  std::printf(
      "step: %d ms compute + one allreduce of %d float32 (Gloo, loopback); %d rounds x %d steps of each "
      "kind, alternating\n",
      flags->step_ms, flags->grad_floats, flags->rounds, flags->steps);
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::printf("%-6s %-14s %-14s %-12s %-8s\n", "ranks", "plain us/step", "agree us/step", "cost us", "cost %");
  int rc = 0;
  for (int n : flags->sizes) {
    const std::string out = "/tmp/ringmaster-agreement-bench." + std::to_string(::getpid()) + "." + std::to_string(n);
    runtime::LocalRanksOptions lo;
    lo.size = n;
    lo.deadline = std::chrono::minutes(30);
    lo.stop_others_on_failure = true;
    auto outcomes = runtime::RunLocalRanks(lo, [&](runtime::RankContext& ctx) { return RunRank(ctx, *flags, out); });
    if (!outcomes.ok() || runtime::FirstFailureCode(*outcomes) != 0) {
      std::fprintf(stderr, "ringmaster-agreement-bench: %d ranks: %s\n", n,
                   outcomes.ok() ? runtime::DescribeFailures(*outcomes).c_str() : outcomes.status().ToString().c_str());
      rc = 1;
      continue;
    }
    std::vector<double> plain, agree, cost;
    std::ifstream in(out);
    for (double p, a; in >> p >> a;) {
      plain.push_back(p);
      agree.push_back(a);
      cost.push_back(a - p);
    }
    ::unlink(out.c_str());
    const double p = Median(plain), a = Median(agree), c = Median(cost);
    const double share = p > 0 ? 100.0 * c / p : 0;
    std::printf("%-6d %-14.1f %-14.1f %-12.1f %-8.2f\n", n, p, a, c, share);
    report.Figure("agreement.cost." + std::to_string(n),
                  "commit agreement's cost per step, " + std::to_string(n) + " ranks, " +
                      std::to_string(flags->step_ms) + " ms step",
                  "%", share, std::nullopt, "", OursAtMost(1.0, "<= 1 % of the step"))["load"] = LoadAverage();
  }
  std::printf("load average at end: %s\n", LoadAverage().c_str());
  if (!report.Write(flags->json)) rc = 1;
  return rc;
}

}  // namespace
}  // namespace ringmaster::bench

int main(int argc, char** argv) { return ringmaster::bench::Main(argc, argv); }
