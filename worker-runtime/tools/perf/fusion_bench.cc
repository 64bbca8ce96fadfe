#include "worker-runtime/tools/perf/fusion_bench.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "worker-runtime/common/pattern.h"
#include "worker-runtime/runtime/runtime.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::perf {
namespace {

using Clock = std::chrono::steady_clock;

// Mean seconds per round of `tensors` allreduces, slowest rank, and wrong elements (rank 0 gets totals).
StatusOr<std::pair<double, uint64_t>> TimeRounds(const PerfOptions& o, runtime::RuntimeConfig config,
                                                 runtime::RankContext& lr, bool fused) {
  config.backend = o.backend;
  config.timeout = o.timeout;
  config.name = fused ? "fused" : "unfused";
  config.fusion_threshold_bytes = fused ? o.fusion_threshold : 0;
  config.local_rank = lr.rank;
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Runtime> rt,
                              runtime::Runtime::Create(config, lr.store, lr.rank, lr.size));
  const size_t count = std::max<size_t>(1, o.tensor_bytes / common::DataTypeSize(o.type));
  std::vector<std::vector<uint8_t>> in, out;
  for (int i = 0; i < o.tensors; ++i) {
    in.push_back(common::MakeInput(o.type, o.op, lr.rank, count, static_cast<size_t>(i)));
    out.emplace_back(in.back().size());
  }
  auto round = [&]() -> Status {
    std::vector<fusion::Handle> handles;
    for (int i = 0; i < o.tensors; ++i) {
      handles.push_back(rt->AllreduceAsync("t" + std::to_string(i), in[i].data(), out[i].data(), count, o.type, o.op));
    }
    for (auto& h : handles) RINGMASTER_RETURN_IF_ERROR(h.Wait());
    return Status::Ok();
  };
  for (int i = 0; i < o.warmup; ++i) RINGMASTER_RETURN_IF_ERROR(round());
  RINGMASTER_RETURN_IF_ERROR(rt->Barrier());
  const int iters = o.iters > 0 ? o.iters : 5;
  auto start = Clock::now();
  for (int i = 0; i < iters; ++i) RINGMASTER_RETURN_IF_ERROR(round());
  double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iters;
  uint64_t wrong = 0;
  if (o.check) {
    for (int i = 0; i < o.tensors; ++i) {
      auto want = common::ReferenceReduce(o.type, o.op, lr.size, count, static_cast<size_t>(i));
      wrong += common::CountMismatches(o.type, out[i].data(), want.data(), count);
    }
  }
  store::WireWriter w;
  uint64_t bits;
  std::memcpy(&bits, &seconds, sizeof bits);
  w.U64(bits).U64(wrong);
  const std::string prefix = std::string("fusion/") + (fused ? "on/" : "off/");
  RINGMASTER_RETURN_IF_ERROR(lr.store->Set(prefix + std::to_string(lr.rank), w.data()));
  if (lr.rank != 0) return std::make_pair(seconds, wrong);
  double slowest = 0;
  uint64_t total_wrong = 0;
  for (int r = 0; r < lr.size; ++r) {
    RINGMASTER_ASSIGN_OR_RETURN(std::string v, lr.store->Get(prefix + std::to_string(r), o.timeout));
    store::WireReader rd(v);
    RINGMASTER_ASSIGN_OR_RETURN(uint64_t b, rd.U64());
    RINGMASTER_ASSIGN_OR_RETURN(uint64_t rw, rd.U64());
    double s;
    std::memcpy(&s, &b, sizeof s);
    slowest = std::max(slowest, s);
    total_wrong += rw;
  }
  return std::make_pair(slowest, total_wrong);
}

}  // namespace

int RunFusionBenchmark(const PerfOptions& o, const runtime::RuntimeConfig& config, runtime::RankContext& lr,
                       std::FILE* out) {
  const bool lead = lr.rank == 0;
  if (lead) {
    std::fprintf(out, "# ringmaster-perf fusion: %d ranks, %d allreduces of %s %s each (%s), fusion threshold %s\n",
                 lr.size, o.tensors, FormatBytes(o.tensor_bytes).c_str(),
                 std::string(common::DataTypeName(o.type)).c_str(), std::string(common::ReduceOpName(o.op)).c_str(),
                 FormatBytes(o.fusion_threshold).c_str());
    std::fflush(out);
  }
  double t[2] = {0, 0};
  uint64_t wrong = 0;
  for (int fused = 1; fused >= 0; --fused) {
    auto r = TimeRounds(o, config, lr, fused != 0);
    if (!r.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", lr.rank, r.status().ToString().c_str());
      return 2;
    }
    t[fused] = r->first;
    wrong += r->second;
    if (lead) {
      double bytes = static_cast<double>(o.tensors) * static_cast<double>(o.tensor_bytes);
      double algbw = bytes / t[fused] / 1e9;
      std::fprintf(out, "  %-8s %12.1f us/round %10.3f algbw(GB/s) %10.3f busbw(GB/s)%s\n", fused ? "fused" : "unfused",
                   t[fused] * 1e6, algbw, algbw * (lr.size > 1 ? 2.0 * (lr.size - 1) / lr.size : 0.0),
                   o.check ? ("  #wrong " + std::to_string(r->second)).c_str() : "");
      std::fflush(out);
    }
  }
  if (lead) std::fprintf(out, "# fused is %.1fx faster than unfused\n", t[0] / t[1]);
  return wrong > 0 ? 3 : 0;
}

}  // namespace ringmaster::perf
