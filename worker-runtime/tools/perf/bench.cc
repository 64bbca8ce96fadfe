#include "worker-runtime/tools/perf/bench.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <vector>

#include "worker-runtime/common/pattern.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::perf {
namespace {

using Clock = std::chrono::steady_clock;

// A buffer in the backend's memory, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(memory::Memory& memory, void* ptr) : memory_(memory), ptr_(ptr) {}
  ~DeviceBuffer() { memory_.Free(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  memory::Memory& memory_;
  void* ptr_;
};

struct Shape {
  size_t in_count = 0;   // elements in this rank's input
  size_t out_count = 0;  // elements in this rank's output
  size_t count = 0;      // the collective's count argument
};

Shape ShapeFor(Collective c, uint64_t bytes, size_t esize, int n) {
  Shape s;
  size_t elements = bytes / esize;
  switch (c) {
    case Collective::kAllreduce:
    case Collective::kBroadcast: s = {elements, elements, elements}; break;
    case Collective::kAllgather:
      s.count = elements / n;
      s = {s.count, s.count * n, s.count};
      break;
    case Collective::kReduceScatter:
      s.count = elements / n;
      s = {s.count * n, s.count, s.count};
      break;
    case Collective::kFusion: break;
  }
  return s;
}

Status RunOnce(const PerfOptions& o, comm::Communicator& comm, void* in, void* out, const Shape& s) {
  if (o.in_place) {
    const size_t es = common::DataTypeSize(o.type);
    switch (o.collective) {
      case Collective::kAllreduce: return comm.Allreduce(out, out, s.count, o.type, o.op);
      case Collective::kBroadcast: return comm.Broadcast(out, out, s.count, o.type, o.root);
      case Collective::kAllgather:
        return comm.Allgather(static_cast<uint8_t*>(out) + comm.rank() * s.count * es, out, s.count, o.type);
      case Collective::kReduceScatter: return comm.ReduceScatter(in, in, s.count, o.type, o.op);
      case Collective::kFusion: break;
    }
  }
  switch (o.collective) {
    case Collective::kAllreduce: return comm.Allreduce(in, out, s.count, o.type, o.op);
    case Collective::kAllgather: return comm.Allgather(in, out, s.count, o.type);
    case Collective::kBroadcast: return comm.Broadcast(in, out, s.count, o.type, o.root);
    case Collective::kReduceScatter: return comm.ReduceScatter(in, out, s.count, o.type, o.op);
    case Collective::kFusion: break;
  }
  return InternalError("unknown collective");
}

common::ReduceOp PatternOp(const PerfOptions& o) {
  return o.collective == Collective::kAllreduce || o.collective == Collective::kReduceScatter ? o.op
                                                                                              : common::ReduceOp::kSum;
}

// Expected output elements [begin, begin + n) of this rank.
std::vector<uint8_t> ExpectedChunk(const PerfOptions& o, int rank, int size, const Shape& s, size_t begin, size_t n) {
  switch (o.collective) {
    case Collective::kAllreduce: return common::ReferenceReduce(o.type, o.op, size, n, begin);
    case Collective::kReduceScatter: return common::ReferenceReduce(o.type, o.op, size, n, s.count * rank + begin);
    case Collective::kBroadcast: return common::MakeInput(o.type, common::ReduceOp::kSum, o.root, n, begin);
    case Collective::kFusion: return {};
    case Collective::kAllgather: {
      std::vector<uint8_t> out;
      const size_t es = common::DataTypeSize(o.type);
      for (size_t i = begin; i < begin + n;) {  // may span several ranks' blocks
        size_t r = i / s.count, off = i % s.count, take = std::min(s.count - off, begin + n - i);
        auto part = common::MakeInput(o.type, common::ReduceOp::kSum, static_cast<int>(r), take, off);
        out.insert(out.end(), part.begin(), part.end());
        i += take;
        (void)es;
      }
      return out;
    }
  }
  return {};
}

StatusOr<uint64_t> CountWrong(const PerfOptions& o, memory::Memory& memory, int rank, int size, const Shape& s,
                              const void* out) {
  const size_t es = common::DataTypeSize(o.type);
  const size_t chunk = 1u << 20;
  std::vector<uint8_t> got;
  uint64_t wrong = 0;
  for (size_t begin = 0; begin < s.out_count; begin += chunk) {
    size_t n = std::min(chunk, s.out_count - begin);
    got.resize(n * es);
    RINGMASTER_RETURN_IF_ERROR(memory.Download(got.data(), static_cast<const uint8_t*>(out) + begin * es, n * es));
    auto want = ExpectedChunk(o, rank, size, s, begin, n);
    wrong += common::CountMismatches(o.type, got.data(), want.data(), n);
  }
  return wrong;
}

Status FillInput(const PerfOptions& o, memory::Memory& memory, int rank, const Shape& s, void* in) {
  const size_t es = common::DataTypeSize(o.type);
  const size_t chunk = 1u << 20;
  const int pattern_rank = o.collective == Collective::kBroadcast && rank != o.root ? rank + 1000 : rank;
  for (size_t begin = 0; begin < s.in_count; begin += chunk) {
    size_t n = std::min(chunk, s.in_count - begin);
    auto data = common::MakeInput(o.type, PatternOp(o), pattern_rank, n, begin);
    RINGMASTER_RETURN_IF_ERROR(memory.Upload(static_cast<uint8_t*>(in) + begin * es, data.data(), data.size()));
  }
  return Status::Ok();
}

// Puts this rank's input where an in-place run reads it (allreduce/broadcast:
// the output buffer; allgather: this rank's block of it; reduce-scatter: the
// input, which also receives the result).
Status PrepareInPlace(const PerfOptions& o, memory::Memory& memory, int rank, const Shape& s, void* in, void* out) {
  const size_t es = common::DataTypeSize(o.type);
  switch (o.collective) {
    case Collective::kAllreduce:
    case Collective::kBroadcast: return FillInput(o, memory, rank, s, out);
    case Collective::kAllgather: return FillInput(o, memory, rank, s, static_cast<uint8_t*>(out) + rank * s.count * es);
    case Collective::kReduceScatter: return FillInput(o, memory, rank, s, in);
    case Collective::kFusion: break;
  }
  return Status::Ok();
}

int ItersFor(const PerfOptions& o, uint64_t bytes) {
  if (o.iters > 0) return o.iters;
  return static_cast<int>(std::clamp<uint64_t>((1ull << 30) / std::max<uint64_t>(bytes, 1), 2, 50));
}

}  // namespace

double BusBandwidthFactor(Collective collective, int n) {
  switch (collective) {
    case Collective::kAllreduce: return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case Collective::kAllgather:
    case Collective::kReduceScatter: return n > 1 ? static_cast<double>(n - 1) / n : 0.0;
    case Collective::kBroadcast: return 1.0;
    case Collective::kFusion: return n > 1 ? 2.0 * (n - 1) / n : 0.0;
  }
  return 1.0;
}

StatusOr<BenchResult> RunBenchmark(const PerfOptions& o, comm::Communicator& comm, memory::Memory& memory,
                                   store::Store& store, std::FILE* out) {
  const int rank = comm.rank(), n = comm.size();
  const size_t es = common::DataTypeSize(o.type);
  const bool lead = rank == 0;
  BenchResult result;
  if (lead) {
    std::fprintf(
        out, "# ringmaster-perf %s: %d ranks, backend %s, dtype %s%s%s, loopback 127.0.0.1%s%s\n",
        std::string(CollectiveName(o.collective)).c_str(), n, std::string(comm::BackendName(comm.backend())).c_str(),
        std::string(common::DataTypeName(o.type)).c_str(),
        PatternOp(o) == o.op && o.collective != Collective::kAllgather && o.collective != Collective::kBroadcast
            ? (", op " + std::string(common::ReduceOpName(o.op))).c_str()
            : "",
        o.collective == Collective::kBroadcast ? (", root " + std::to_string(o.root)).c_str() : "",
        o.check ? ", checking results" : "", o.in_place ? ", in place" : ", out of place");
    std::fprintf(out, "# %10s %12s %6s %12s %12s %12s %8s\n", "size", "count", "iters", "time(us)", "algbw(GB/s)",
                 "busbw(GB/s)", o.check ? "#wrong" : "");
    std::fflush(out);
  }
  int step = 0;
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; ++step) {
    Shape s = ShapeFor(o.collective, bytes, es, n);
    uint64_t next = std::max<uint64_t>(bytes + 1, static_cast<uint64_t>(static_cast<double>(bytes) * o.step_factor));
    if (s.count == 0) {
      if (lead) std::fprintf(out, "  %10s (skipped: fewer than one element per rank)\n", FormatBytes(bytes).c_str());
      bytes = next;
      continue;
    }
    RINGMASTER_ASSIGN_OR_RETURN(void* in_ptr, memory.Allocate(s.in_count * es));
    DeviceBuffer in(memory, in_ptr);
    RINGMASTER_ASSIGN_OR_RETURN(void* out_ptr, memory.Allocate(s.out_count * es));
    DeviceBuffer outbuf(memory, out_ptr);
    RINGMASTER_RETURN_IF_ERROR(FillInput(o, memory, rank, s, in.get()));
    if (o.in_place) RINGMASTER_RETURN_IF_ERROR(PrepareInPlace(o, memory, rank, s, in.get(), outbuf.get()));
    const int iters = ItersFor(o, bytes);
    for (int i = 0; i < o.warmup; ++i) RINGMASTER_RETURN_IF_ERROR(RunOnce(o, comm, in.get(), outbuf.get(), s));
    RINGMASTER_RETURN_IF_ERROR(comm.Barrier());
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) RINGMASTER_RETURN_IF_ERROR(RunOnce(o, comm, in.get(), outbuf.get(), s));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
    uint64_t wrong = 0;
    if (o.check) {
      const void* result = outbuf.get();
      if (o.in_place) {  // the timed runs kept reducing in place: check one run from fresh input
        RINGMASTER_RETURN_IF_ERROR(PrepareInPlace(o, memory, rank, s, in.get(), outbuf.get()));
        RINGMASTER_RETURN_IF_ERROR(RunOnce(o, comm, in.get(), outbuf.get(), s));
        if (o.collective == Collective::kReduceScatter) result = in.get();
      }
      RINGMASTER_ASSIGN_OR_RETURN(wrong, CountWrong(o, memory, rank, n, s, result));
    }
    // Report to rank 0 through the store: the slowest rank's time, every rank's errors.
    store::WireWriter w;
    uint64_t us_bits;
    std::memcpy(&us_bits, &us, sizeof us);
    w.U64(us_bits).U64(wrong);
    const std::string prefix = "perf/" + std::to_string(step) + "/";
    RINGMASTER_RETURN_IF_ERROR(store.Set(prefix + std::to_string(rank), w.data()));
    if (lead) {
      double max_us = 0;
      uint64_t total_wrong = 0;
      for (int r = 0; r < n; ++r) {
        RINGMASTER_ASSIGN_OR_RETURN(std::string v, store.Get(prefix + std::to_string(r), o.timeout));
        store::WireReader rd(v);
        RINGMASTER_ASSIGN_OR_RETURN(uint64_t bits, rd.U64());
        RINGMASTER_ASSIGN_OR_RETURN(uint64_t rw, rd.U64());
        double rus;
        std::memcpy(&rus, &bits, sizeof rus);
        max_us = std::max(max_us, rus);
        total_wrong += rw;
      }
      const uint64_t size_bytes = std::max(s.in_count, s.out_count) * es;
      double algbw = static_cast<double>(size_bytes) / (max_us * 1e-6) / 1e9;
      double busbw = algbw * BusBandwidthFactor(o.collective, n);
      std::fprintf(out, "  %10s %12zu %6d %12.1f %12.3f %12.3f %8s\n", FormatBytes(size_bytes).c_str(),
                   std::max(s.in_count, s.out_count), iters, max_us, algbw, busbw,
                   o.check ? std::to_string(total_wrong).c_str() : "");
      std::fflush(out);
      result.wrong_elements += total_wrong;
    }
    bytes = next;
  }
  if (lead) {
    std::fprintf(out, "# %s\n",
                 !o.check                     ? "results not checked (use --check)"
                 : result.wrong_elements == 0 ? "all results correct"
                                              : "WRONG RESULTS");
  }
  return result;
}

}  // namespace ringmaster::perf
