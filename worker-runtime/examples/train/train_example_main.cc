// ringmaster-train-example: data-parallel SGD (linear regression on a synthetic
// data set generated from --seed) under the elastic driver, CPU through Gloo
// (or the gradient through NCCL on a GPU with --backend nccl). The global batch
// is fixed whatever the world size: each rank sums its samples' gradients, an
// allreduce SUM adds the shares, and the update divides by the global batch
// size, so the result does not depend on the membership. With --hierarchical
// the sum goes per node, across node leaders, then back per node (process sets
// re-split by node in every generation).
//
// Membership: a file (ringmaster-run) or, in the operator's pods, the job's own
// TrainingJob watched with the pod's service-account token.
//
// Outputs in --out DIR: weights.<worker>.txt (%.17g per line),
// journal.<worker>.log (sample_journal.h; ringmaster-run resolves the journals
// into samples.log) and commits.<worker>.log ("<step> <crc>" of each agreed step,
// commit_log.h). With RINGMASTER_PHASE_FILE (or --phase-file) the training thread
// marks the gradient's collective in that file (tools/run/phase_file.h: "C <step>"
// right before the allreduce is submitted, "- <step>" once it returned), for
// ringmaster-run's killcoll. --integer-grads rounds each sample's gradient to whole
// 2^-10s, so the sums, and the weights, are exact whatever the world. Flags fall
// back to RINGMASTER_* environment variables (train_example_options.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "api/worker_env.h"
#include "base/cli.h"
#include "worker-runtime/data/elastic_sampler.h"
#include "worker-runtime/data/splitmix64.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/elastic/failure_class.h"
#include "worker-runtime/elastic/sample_journal.h"
#include "worker-runtime/elastic/termination_report.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/elastic/worker_setup.h"
#include "worker-runtime/examples/train/commit_log.h"
#include "worker-runtime/examples/train/train_example_options.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/runtime/config.h"
#include "worker-runtime/tools/run/phase_file.h"

namespace ringmaster::examples {
namespace {

// Sample i of the synthetic data set: features x in [-1, 1), target y = w*.x + noise.
void Sample(uint64_t seed, uint64_t i, int d, std::vector<double>& x, double& y) {
  data::SplitMix64 rng(data::MixSeed(seed, i));
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

// This program prints every line the same way; the libraries take a LogSink.
using LineLog = std::function<void(std::string_view)>;
LogSink LineSink(LineLog log) {
  return [log = std::move(log)](LogLevel, std::string_view line) { log(line); };
}

// The gradient sum over the world: one allreduce, or (hierarchical) per node, across
// node leaders, and back per node. `buf` holds this rank's share and gets the sum.
Status SumGradient(const elastic::StepContext& ctx, bool hierarchical, const std::string& node, void* buf, size_t n,
                   common::DataType type) {
  if (!hierarchical) return ctx.rt->Allreduce("grad", buf, buf, n, type, common::ReduceOp::kSum);
  RINGMASTER_ASSIGN_OR_RETURN(int local, ctx.ProcessSet("node:" + node));
  RINGMASTER_ASSIGN_OR_RETURN(int leaders, ctx.ProcessSet("node-leaders"));
  RINGMASTER_RETURN_IF_ERROR(ctx.rt->Allreduce("grad.local", buf, buf, n, type, common::ReduceOp::kSum, local));
  RINGMASTER_ASSIGN_OR_RETURN(int local_rank, ctx.rt->ProcessSetRank(local));
  if (local_rank == 0) {
    RINGMASTER_RETURN_IF_ERROR(ctx.rt->Allreduce("grad.cross", buf, buf, n, type, common::ReduceOp::kSum, leaders));
  }
  return ctx.rt->BroadcastAsync("grad.bcast", buf, buf, n, type, 0, local).Wait();
}

// The gradient's buffer where the collectives run: host memory under Gloo, CUDA memory on the
// runtime's GPU under NCCL (Runtime::device(), which the generation's local rank picks). Made on the
// first step (the backend is known then) and again when a rebuild moves this rank to another GPU.
class GradientBuffer {
 public:
  // device: a CUDA device, or -1 for host memory.
  GradientBuffer(int device, size_t bytes)
      : memory_(
            memory::NewMemoryFor(device >= 0 ? comm::MemoryKind::kCuda : comm::MemoryKind::kHost, std::max(device, 0))),
        device_(device),
        bytes_(bytes) {}
  ~GradientBuffer() {
    if (ptr_) memory_->Free(ptr_);
  }
  GradientBuffer(const GradientBuffer&) = delete;
  GradientBuffer& operator=(const GradientBuffer&) = delete;

  int device() const { return device_; }

  // Copies `host` in, runs `reduce` on the buffer and copies the result back into `host`.
  template <typename Reduce>
  Status Run(void* host, const Reduce& reduce) {
    if (ptr_ == nullptr) {
      RINGMASTER_ASSIGN_OR_RETURN(ptr_, memory_->Allocate(bytes_));
    }
    RINGMASTER_RETURN_IF_ERROR(memory_->Upload(ptr_, host, bytes_));
    RINGMASTER_RETURN_IF_ERROR(reduce(ptr_));
    return memory_->Download(host, ptr_, bytes_);
  }

 private:
  const std::unique_ptr<memory::Memory> memory_;
  const int device_;
  const size_t bytes_;
  void* ptr_ = nullptr;
};

void WriteWeights(const std::string& path, const std::vector<double>& weights) {
  if (FILE* f = std::fopen((path + ".tmp").c_str(), "w")) {
    for (double w : weights) std::fprintf(f, "%.17g\n", w);
    std::fflush(f);
    ::fsync(fileno(f));
    std::fclose(f);
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
}

// The model, its data and one training step. Used by the driver's thread only.
template <typename T>
class LinearRegression {
 public:
  LinearRegression(const TrainOptions& o, data::ElasticSampler* sampler, elastic::SampleJournal* journal,
                   membership::MembershipSource* source, elastic::Heartbeat* heartbeat, run::PhaseFile* phase)
      : o_(o),
        sampler_(sampler),
        journal_(journal),
        source_(source),
        heartbeat_(heartbeat),
        phase_(phase),
        weights_(o.features, T(0)) {}

  elastic::ElasticState MakeState() {
    return elastic::ElasticState([this] { return Bytes(weights_); },
                                 [this](std::string_view b) -> Status {
                                   if (b.size() != weights_.size() * sizeof(T))
                                     return DataLossError("weights of the wrong size");
                                   std::memcpy(weights_.data(), b.data(), b.size());
                                   return Status::Ok();
                                 });
  }

  StatusOr<data::SampleCursor> Step(const elastic::StepContext& ctx) {
    if (!buffer_ || buffer_->device() != ctx.rt->device()) {
      buffer_ = std::make_unique<GradientBuffer>(ctx.rt->device(), o_.features * sizeof(T));
    }
    if (o_.hierarchical && node_.empty()) {
      auto* me = source_->Latest().Find(o_.worker_id);
      if (me) node_ = me->node;
    }
    RINGMASTER_ASSIGN_OR_RETURN(auto plan, sampler_->Plan(ctx.cursor, ctx.rt->size(), ctx.rt->rank()));
    std::vector<T> grad = Gradient(plan.indices);
    RINGMASTER_RETURN_IF_ERROR(journal_->Attempt(ctx.incarnation, ctx.step, plan.epoch, plan.indices));
    if (o_.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o_.step_delay_ms));
    const auto t0 = std::chrono::steady_clock::now();
    const common::DataType type = sizeof(T) == 8 ? common::DataType::kFloat64 : common::DataType::kFloat32;
    RINGMASTER_RETURN_IF_ERROR(buffer_->Run(grad.data(), [&](void* dev) {
      // The phase file brackets the collective (numbered as the commits: step 1 is the first), whatever it returns.
      phase_->Enter(ctx.step + 1);
      Status summed = SumGradient(ctx, o_.hierarchical, node_, dev, grad.size(), type);
      phase_->Leave(ctx.step + 1);
      return summed;
    }));
    const std::vector<T>& sum = grad;  // now the world's sum
    if (ctx.metrics) {
      ctx.metrics->Samples(plan.indices.size());
      ctx.metrics->Collective(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                              grad.size() * sizeof(T));
    }
    // Integer gradients are counts of kIntegerGradUnit: the unit is applied after the sum.
    const double unit = o_.integer_grads ? kIntegerGradUnit : 1.0;
    const T scale = static_cast<T>(o_.lr * unit / static_cast<double>(plan.global_size));
    for (int j = 0; j < o_.features; ++j) weights_[j] -= scale * sum[j];
    heartbeat_->Set(ctx.step + 1);
    return plan.next;
  }

  std::vector<double> weights() const { return std::vector<double>(weights_.begin(), weights_.end()); }
  // The CUDA device the gradient last went through; -1 before the first step or on the host.
  int device() const { return buffer_ ? buffer_->device() : -1; }

 private:
  // This rank's share of the gradient: the sum over its samples (with --integer-grads each sample's part in
  // whole kIntegerGradUnits, so the sum is an exact integer in any order).
  std::vector<T> Gradient(const std::vector<uint64_t>& indices) {
    std::vector<T> grad(o_.features, T(0));
    for (uint64_t id : indices) {
      double y;
      Sample(o_.seed, id, o_.features, x_, y);
      double err = -y;
      for (int j = 0; j < o_.features; ++j) err += static_cast<double>(weights_[j]) * x_[j];
      for (int j = 0; j < o_.features; ++j) {
        const double g = err * x_[j];
        grad[j] += static_cast<T>(o_.integer_grads ? std::round(g / kIntegerGradUnit) : g);
      }
    }
    return grad;
  }

  const TrainOptions& o_;
  data::ElasticSampler* const sampler_;
  elastic::SampleJournal* const journal_;
  membership::MembershipSource* const source_;
  elastic::Heartbeat* const heartbeat_;
  run::PhaseFile* const phase_;  // writes nothing without RINGMASTER_PHASE_FILE
  std::vector<T> weights_;
  std::vector<double> x_;                   // a sample's features (reused)
  std::unique_ptr<GradientBuffer> buffer_;  // made on the first step, once the backend and GPU are known
  // This worker's node in the records (the launcher's simulated node, or the pod's node): it never
  // changes, so it is read once, on the first step (a record that has this worker exists by then).
  std::string node_;
};

// What no rebuild repairs ended this worker (failure_class.h): the termination message naming its node, GPU and
// the error (termination_report.h), then kWorkerFailedExitCode, so that it is replaced (or the run ends).
int EndWorker(const TrainOptions& o, const std::map<std::string, std::string>& env, int device, const Status& why,
              const LineLog& log) {
  const std::string path = elastic::TerminationLogPath(env);
  auto written = elastic::WriteTerminationMessage(
      path, {o.worker_id, elastic::NodeFromEnvironment(env), elastic::DescribeGpu(device, o.gpus), why.ToString()});
  log("this worker cannot go on (" + std::string(elastic::Describe(elastic::ClassifyFailure(why))) +
      "): " + why.ToString());
  log(written.ok() ? "termination message written to " + path : written.status().ToString());
  return elastic::kWorkerFailedExitCode;
}

template <typename T>
int Train(const TrainOptions& o, const runtime::RuntimeConfig& config, const std::map<std::string, std::string>& env) {
  LineLog log = [&](std::string_view line) {
    std::fprintf(stderr, "[%s] %.*s\n", o.worker_id.c_str(), static_cast<int>(line.size()), line.data());
  };
  const LogSink sink = LineSink(log);
  auto source = elastic::OpenMembershipSource(o, sink);
  if (!source.ok()) return log(source.status().ToString()), 2;
  auto sampler = data::ElasticSampler::Create({o.samples, o.batch, o.seed});
  if (!sampler.ok()) return log(sampler.status().ToString()), 2;
  auto journal = elastic::SampleJournal::Open(o.out + "/journal." + o.worker_id + ".log");
  if (!journal.ok()) return log(journal.status().ToString()), 2;
  auto checkpoints = elastic::OpenCheckpoints(o, sink);
  if (!checkpoints.ok()) return log(checkpoints.status().ToString()), 2;

  auto commits = CommitLog::Open(o.out + "/commits." + o.worker_id + ".log");
  if (!commits.ok()) return log(commits.status().ToString()), 2;
  run::PhaseFile phase;
  if (!o.phase_file.empty()) {
    auto opened = run::PhaseFile::Open(o.phase_file);
    if (!opened.ok()) return log(opened.status().ToString()), 2;
    phase = std::move(opened).value();
  }

  elastic::Heartbeat heartbeat(o.heartbeat_file);
  LinearRegression<T> model(o, &*sampler, &*journal, source->get(), &heartbeat, &phase);
  elastic::ElasticState state = model.MakeState();
  // Prometheus /metrics and the readiness probe's /readyz (ready once the driver can take part).
  elastic::WorkerMetrics metrics(elastic::OpenGpuTelemetry(o, sink));
  Status served = metrics.Serve(o.host + ":" + std::to_string(o.health_port));
  log(metrics.ServeOutcome(served, o.health_port));
  elastic::ElasticOptions driver_options = elastic::DriverOptions(o, config, &metrics, checkpoints->get(), sink);
  if (o.hierarchical) driver_options.process_sets.push_back(elastic::SetsPerNode());
  driver_options.on_agreed = [&](int64_t step, uint32_t crc) { commits->Append(step, crc); };
  elastic::ElasticDriver driver(std::move(driver_options), source->get(), &state);
  auto restored = [&](int64_t incarnation, int64_t at) {
    heartbeat.Set(at);
    Status s = journal->Restored(incarnation, at);
    if (!s.ok()) log(s.ToString());
  };
  auto result = driver.Run(o.steps, [&](const elastic::StepContext& ctx) { return model.Step(ctx); }, restored);
  if (!result.ok()) {
    if (elastic::ClassifyFailure(result.status()) == elastic::FailureClass::kEndsWorker) {
      // The GPU: the one its steps ran on, else the launcher's choice; none on the host.
      const int device = model.device() >= 0 ? model.device() : o.backend == comm::Backend::kGloo ? -1 : config.device;
      return EndWorker(o, env, device, result.status(), log);
    }
    log("training failed: " + result.status().ToString());
    return 1;
  }
  if (*result == elastic::ElasticResult::kLeft) {
    log("left the job (not in the membership); exiting 0");
    return 0;
  }
  log("finished " + std::to_string(state.committed_step()) + " steps at generation " +
      std::to_string(driver.joined_generation()));
  // Every finisher writes its own copy; the launcher picks one (all are equal).
  WriteWeights(o.out + "/weights." + o.worker_id + ".txt", model.weights());
  std::printf("FINISHED %lld\n", static_cast<long long>(state.committed_step()));
  return 0;
}

}  // namespace
}  // namespace ringmaster::examples

int main(int argc, char** argv) {
  // The environment, read once: the example's options and the runtime's configuration both come from it.
  const std::map<std::string, std::string> env = ringmaster::api::EnvironmentSnapshot();
  auto options = ringmaster::examples::ParseTrainOptions(argc, argv, env);
  if (auto exit_code =
          ringmaster::cli::ExitEarly("ringmaster-train-example", options, ringmaster::examples::TrainUsage)) {
    return *exit_code;
  }
  // --out may name a directory that does not exist yet (with its parents).
  std::error_code ec;
  std::filesystem::create_directories(options->out, ec);
  if (ec) {
    std::fprintf(stderr, "ringmaster-train-example: cannot create --out %s: %s\n", options->out.c_str(),
                 ec.message().c_str());
    return 2;
  }
  // The runtime's RINGMASTER_* configuration (fusion, cycle time, timeline, process sets).
  auto config = ringmaster::runtime::ParseRuntimeConfig(env);
  if (!config.ok()) {
    std::fprintf(stderr, "ringmaster-train-example: %s\n", config.status().message().c_str());
    return 2;
  }
  return options->float64 ? ringmaster::examples::Train<double>(*options, *config, env)
                          : ringmaster::examples::Train<float>(*options, *config, env);
}
