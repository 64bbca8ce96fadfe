// ringmaster-train-example: data-parallel SGD (linear regression on a synthetic
// data set generated from --seed) under the elastic driver, CPU through Gloo.
// The global batch is fixed whatever the world size: each rank sums its
// samples' gradients, an allreduce SUM adds the shares, and the update divides
// by the global batch size, so the result does not depend on the membership.
//
// Outputs in --out DIR: weights.txt (rank 0 at the end, %.17g per line) and
// journal.<worker>.log (sample_journal.h); ringmaster-run resolves the journals
// into samples.log. Flags fall back to RINGMASTER_* environment variables.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "data/elastic_sampler.h"
#include "data/splitmix64.h"
#include "elastic/elastic_driver.h"
#include "elastic/sample_journal.h"
#include "elastic/worker_metrics.h"
#include "membership/file_source.h"

namespace ringmaster::elastic {
namespace {

struct Options {
  int64_t steps = 20;
  uint64_t seed = 1;
  bool float64 = true;
  uint64_t samples = 64;
  int features = 8;
  uint64_t batch = 16;
  double lr = 0.1;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  std::string out = ".";
  std::string membership_file;
  std::string worker_id;
  std::string secret;
  int store_port = 0;
  int min_size = 1;
  int timeout_ms = 10000;
  int step_delay_ms = 0;
  std::string heartbeat_file;
  int health_port = 9400;
};

StatusOr<Options> ParseOptions(int argc, char** argv) {
  std::map<std::string, std::string> v;
  auto env = [&](const char* flag, const char* var) {
    if (const char* e = std::getenv(var)) v[flag] = e;
  };
  env("--membership-file", "RINGMASTER_MEMBERSHIP_FILE");
  env("--worker-id", "RINGMASTER_WORKER_ID");
  env("--secret", "RINGMASTER_SECRET");
  env("--store-port", "RINGMASTER_STORE_PORT");
  env("--min", "RINGMASTER_MIN_WORKERS");
  env("--heartbeat-file", "RINGMASTER_HEARTBEAT_FILE");
  env("--out", "RINGMASTER_OUT");
  env("--health-port", "RINGMASTER_HEALTH_PORT");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help") return InvalidArgumentError(
        "usage: ringmaster-train-example [--steps N] [--seed S] [--dtype float32|float64] [--samples N] "
        "[--features D] [--batch B] [--lr X] [--checkpoint-dir DIR] [--checkpoint-every K] [--out DIR] "
        "[--membership-file F] [--worker-id ID] [--secret S] [--store-port P] [--min N] [--timeout-ms T] "
        "[--step-delay-ms T] [--heartbeat-file F] [--health-port P (RINGMASTER_HEALTH_PORT, 9400; 0 = any)]");
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) return InvalidArgumentError("bad argument '" + a + "' (see --help)");
    v[a] = argv[++i];
  }
  Options o;
  try {
    for (const auto& [k, val] : v) {
      if (k == "--steps") o.steps = std::stoll(val);
      else if (k == "--seed") o.seed = std::stoull(val);
      else if (k == "--dtype") {
        if (val != "float32" && val != "float64") return InvalidArgumentError("--dtype must be float32 or float64");
        o.float64 = val == "float64";
      } else if (k == "--samples") o.samples = std::stoull(val);
      else if (k == "--features") o.features = std::stoi(val);
      else if (k == "--batch") o.batch = std::stoull(val);
      else if (k == "--lr") o.lr = std::stod(val);
      else if (k == "--checkpoint-dir") o.checkpoint_dir = val;
      else if (k == "--checkpoint-every") o.checkpoint_every = std::stoi(val);
      else if (k == "--out") o.out = val;
      else if (k == "--membership-file") o.membership_file = val;
      else if (k == "--worker-id") o.worker_id = val;
      else if (k == "--secret") o.secret = val;
      else if (k == "--store-port") o.store_port = std::stoi(val);
      else if (k == "--min") o.min_size = std::stoi(val);
      else if (k == "--timeout-ms") o.timeout_ms = std::stoi(val);
      else if (k == "--step-delay-ms") o.step_delay_ms = std::stoi(val);
      else if (k == "--heartbeat-file") o.heartbeat_file = val;
      else if (k == "--health-port") o.health_port = std::stoi(val);
      else return InvalidArgumentError("unknown flag '" + k + "' (see --help)");
    }
  } catch (const std::exception&) {
    return InvalidArgumentError("a flag has a value that is not a number");
  }
  if (o.membership_file.empty() || o.worker_id.empty() || o.secret.empty() || o.store_port <= 0) {
    return InvalidArgumentError("--membership-file, --worker-id, --secret and --store-port are required "
                                "(or RINGMASTER_MEMBERSHIP_FILE/WORKER_ID/SECRET/STORE_PORT)");
  }
  if (o.features < 1 || o.batch < 1 || o.samples < 1) return InvalidArgumentError("--features, --batch, --samples must be >= 1");
  return o;
}

// Sample i of the synthetic data set: features x in [-1, 1), target y = w*.x + noise.
void Sample(uint64_t seed, uint64_t i, int d, std::vector<double>& x, double& y) {
  runtime::data::SplitMix64 rng(runtime::data::MixSeed(seed, i));
  auto uniform = [&] { return static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; };
  x.resize(d);
  y = 0;
  for (int j = 0; j < d; ++j) {
    x[j] = uniform();
    y += (j + 1) * 0.5 * x[j];  // w*_j = (j+1)/2
  }
  y += 0.01 * uniform();
}

template <typename T>
std::string Bytes(const std::vector<T>& w) {
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(T));
}

template <typename T>
int Train(const Options& o) {
  using runtime::data::SampleCursor;
  auto log = [&](std::string_view line) {
    std::fprintf(stderr, "[%s] %.*s\n", o.worker_id.c_str(), static_cast<int>(line.size()), line.data());
  };
  auto source = membership::FileMembershipSource::Start({o.membership_file, std::chrono::milliseconds(20), log});
  if (!source.ok()) return log(source.status().ToString()), 2;
  auto sampler = runtime::data::ElasticSampler::Create({o.samples, o.batch, o.seed});
  if (!sampler.ok()) return log(sampler.status().ToString()), 2;
  auto journal = SampleJournal::Open(o.out + "/journal." + o.worker_id + ".log");
  if (!journal.ok()) return log(journal.status().ToString()), 2;
  std::unique_ptr<runtime::checkpoint::CheckpointStore> checkpoints;
  if (!o.checkpoint_dir.empty()) {
    auto quiet_log = [&](std::string_view line) {  // retention deletes one old checkpoint per save: not news
      if (line.rfind("retention", 0) != 0) log(line);
    };
    auto opened = runtime::checkpoint::CheckpointStore::Open({o.checkpoint_dir, 3, std::chrono::seconds(600), quiet_log});
    if (!opened.ok()) return log(opened.status().ToString()), 2;
    checkpoints = std::move(opened).value();
  }

  std::vector<T> weights(o.features, T(0));
  ElasticState state([&] { return Bytes(weights); },
                     [&](std::string_view b) -> Status {
                       if (b.size() != weights.size() * sizeof(T)) return DataLossError("weights of the wrong size");
                       std::memcpy(weights.data(), b.data(), b.size());
                       return Status::Ok();
                     });

  // Heartbeat for the launcher: the committed step, rewritten every 100 ms.
  std::atomic<bool> done{false};
  std::atomic<int64_t> committed{0};
  std::thread heartbeat([&] {
    while (!done && !o.heartbeat_file.empty()) {
      std::string tmp = o.heartbeat_file + ".tmp";
      if (FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fprintf(f, "%lld\n", static_cast<long long>(committed.load()));
        std::fclose(f);
        std::rename(tmp.c_str(), o.heartbeat_file.c_str());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  // Prometheus /metrics and the readiness probe's /readyz (ready once a generation is joined).
  WorkerMetrics metrics;
  Status served = metrics.Serve("0.0.0.0:" + std::to_string(o.health_port));
  if (served.ok()) {
    log("serving /metrics and /readyz on port " + std::to_string(metrics.port()));
  } else {
    log("metrics endpoint disabled: " + served.ToString());
  }

  ElasticOptions eo;
  eo.metrics = &metrics;
  eo.worker_id = o.worker_id;
  eo.secret = o.secret;
  eo.store_port = static_cast<uint16_t>(o.store_port);
  eo.min_size = o.min_size;
  eo.rebuild_timeout = std::chrono::milliseconds(o.timeout_ms);
  eo.runtime.backend = runtime::Backend::kGloo;
  eo.runtime.timeout = std::chrono::milliseconds(o.timeout_ms);
  eo.runtime.fusion_threshold_bytes = 0;
  eo.checkpoints = checkpoints.get();
  eo.checkpoint_every = o.checkpoint_every;
  eo.log = log;
  ElasticDriver driver(eo, source->get(), &state);

  const runtime::DataType type = sizeof(T) == 8 ? runtime::DataType::kFloat64 : runtime::DataType::kFloat32;
  std::vector<double> x;
  auto step = [&](const StepContext& ctx) -> StatusOr<SampleCursor> {
    RINGMASTER_ASSIGN_OR_RETURN(auto plan, sampler->Plan(ctx.cursor, ctx.rt->size(), ctx.rt->rank()));
    std::vector<T> grad(o.features, T(0));
    for (uint64_t id : plan.indices) {
      double y;
      Sample(o.seed, id, o.features, x, y);
      double err = -y;
      for (int j = 0; j < o.features; ++j) err += static_cast<double>(weights[j]) * x[j];
      for (int j = 0; j < o.features; ++j) grad[j] += static_cast<T>(err * x[j]);
    }
    RINGMASTER_RETURN_IF_ERROR(journal->Attempt(ctx.incarnation, ctx.step, plan.epoch, plan.indices));
    if (o.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_delay_ms));
    std::vector<T> sum(o.features);
    const auto t0 = std::chrono::steady_clock::now();
    RINGMASTER_RETURN_IF_ERROR(ctx.rt->Allreduce("grad", grad.data(), sum.data(), grad.size(), type, runtime::ReduceOp::kSum));
    if (ctx.metrics) {
      ctx.metrics->Collective(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                              grad.size() * sizeof(T));
    }
    const T scale = static_cast<T>(o.lr / static_cast<double>(plan.global_size));
    for (int j = 0; j < o.features; ++j) weights[j] -= scale * sum[j];
    committed = ctx.step + 1;
    return plan.next;
  };
  auto restored = [&](int64_t incarnation, int64_t at) {
    committed = at;
    Status s = journal->Restored(incarnation, at);
    if (!s.ok()) log(s.ToString());
  };
  auto result = driver.Run(o.steps, step, restored);
  done = true;
  heartbeat.join();
  if (!result.ok()) {
    log("training failed: " + result.status().ToString());
    return 1;
  }
  if (*result == ElasticResult::kLeft) {
    log("left the job (not in the membership); exiting 0");
    return 0;
  }
  log("finished " + std::to_string(state.committed_step()) + " steps at generation " +
      std::to_string(driver.joined_generation()));
  // Every finisher writes its own copy; the launcher picks one (all are equal).
  std::string path = o.out + "/weights." + o.worker_id + ".txt";
  if (FILE* f = std::fopen((path + ".tmp").c_str(), "w")) {
    for (T w : weights) std::fprintf(f, "%.17g\n", static_cast<double>(w));
    std::fflush(f);
    ::fsync(fileno(f));
    std::fclose(f);
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  std::printf("FINISHED %lld\n", static_cast<long long>(state.committed_step()));
  return 0;
}

}  // namespace
}  // namespace ringmaster::elastic

int main(int argc, char** argv) {
  auto options = ringmaster::elastic::ParseOptions(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "ringmaster-train-example: %s\n", options.status().message().c_str());
    return 2;
  }
  return options->float64 ? ringmaster::elastic::Train<double>(*options) : ringmaster::elastic::Train<float>(*options);
}
