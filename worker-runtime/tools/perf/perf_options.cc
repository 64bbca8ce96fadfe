#include "worker-runtime/tools/perf/perf_options.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>

#include "base/cli.h"

namespace ringmaster::perf {

std::string_view CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllreduce: return "allreduce";
    case Collective::kAllgather: return "allgather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kFusion: return "fusion";
  }
  return "?";
}

namespace {

constexpr char kDescription[] = R"(ringmaster-perf: a collective benchmark and checker.

Starts --np local ranks over loopback (127.0.0.1), runs COLLECTIVE for every
buffer size from --min-bytes to --max-bytes and prints, per size, the time,
algorithm bandwidth and bus bandwidth (nccl-tests formulas) and, with --check,
the number of wrong result elements. Exits non-zero when any result is wrong
or a rank fails.

`fusion` submits --tensors allreduces of --tensor-bytes each asynchronously
through the runtime, once with tensor fusion and once without, and prints both.
Sizes take K, M or G (powers of 1024): 1K, 64M, 1G.)";

constexpr char kFooter[] = R"(Size is the buffer a rank holds: allreduce and broadcast count*size(T); allgather
the gathered output, reduce-scatter the input (both np*count*size(T)).
busbw = algbw * factor, factor = 2(n-1)/n allreduce, (n-1)/n allgather and
reduce-scatter, 1 broadcast.)";

StatusOr<Collective> ParseCollective(const std::string& name) {
  if (name == "allreduce") return Collective::kAllreduce;
  if (name == "allgather") return Collective::kAllgather;
  if (name == "broadcast") return Collective::kBroadcast;
  if (name == "reduce-scatter" || name == "reducescatter") return Collective::kReduceScatter;
  if (name == "fusion") return Collective::kFusion;
  return InvalidArgumentError("unknown collective '" + name +
                              "' (want allreduce, allgather, broadcast, reduce-scatter or fusion)");
}

template <typename T, typename Parser>
std::function<StatusOr<T>(const std::string&)> Via(Parser parse) {
  return [parse](const std::string& text) -> StatusOr<T> { return parse(text); };
}

void AddSizeFlags(CLI::App& app, PerfOptions& o) {
  cli::AddParsed<uint64_t>(app, "--min-bytes", &o.min_bytes, ParseByteSize, "smallest buffer",
                           FormatBytes(o.min_bytes));
  cli::AddParsed<uint64_t>(app, "--max-bytes", &o.max_bytes, ParseByteSize, "largest buffer", FormatBytes(o.max_bytes));
  cli::AddParsed<double>(
      app, "--step-factor", &o.step_factor,
      [](const std::string& text) -> StatusOr<double> {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !(v > 1.0))
          return InvalidArgumentError("wants a number > 1, got '" + text + "'");
        return v;
      },
      "multiply the size by this (> 1) between steps", "2");
  app.add_option("--iters", o.iters, "timed iterations per size (0: about 256M of traffic, 1..50)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--warmup", o.warmup, "untimed iterations per size")->check(CLI::Range(0, 1000000));
}

void AddFusionFlags(CLI::App& app, PerfOptions& o) {
  app.add_option("--tensors", o.tensors, "fusion: allreduces per round")->check(CLI::Range(1, 1000000));
  cli::AddParsed<uint64_t>(app, "--tensor-bytes", &o.tensor_bytes, ParseByteSize, "fusion: bytes per tensor",
                           FormatBytes(o.tensor_bytes));
  cli::AddParsed<uint64_t>(app, "--fusion-threshold", &o.fusion_threshold, ParseByteSize, "fusion: fusion buffer size",
                           FormatBytes(o.fusion_threshold));
}

// The flags, bound to `o`; o's values are the defaults --help shows.
std::unique_ptr<CLI::App> NewPerfApp(PerfOptions& o) {
  auto app = cli::NewApp("ringmaster-perf", kDescription, kFooter);
  cli::AddParsed<Collective>(*app, "collective", &o.collective, ParseCollective,
                             "allreduce | allgather | broadcast | reduce-scatter | fusion", "")
      ->required();
  app->add_option("--np", o.np, "number of local ranks")->check(CLI::Range(1, 256));
  cli::AddParsed<comm::Backend>(*app, "--backend", &o.backend, Via<comm::Backend>(comm::ParseBackend),
                                "gloo | nccl | auto (nccl needs one GPU per rank)", "gloo");
  AddSizeFlags(*app, o);
  app->add_flag("--in-place", o.in_place, "run in place (output buffer = input buffer) instead of out of place");
  app->add_flag("--check", o.check, "verify every result against a reference and count wrong elements");
  cli::AddParsed<common::DataType>(*app, "--dtype", &o.type, Via<common::DataType>(common::ParseDataType),
                                   "float32 float64 float16 bfloat16 int32 int64 uint8", "float32");
  cli::AddParsed<common::ReduceOp>(*app, "--op", &o.op, Via<common::ReduceOp>(common::ParseReduceOp),
                                   "sum avg min max product (allreduce, reduce-scatter)", "sum");
  app->add_option("--root", o.root, "broadcast root")->check(CLI::Range(0, 255));
  cli::AddParsed<std::chrono::milliseconds>(
      *app, "--timeout-ms", &o.timeout,
      [](const std::string& text) -> StatusOr<std::chrono::milliseconds> {
        char* end = nullptr;
        long v = std::strtol(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || v < 1 || v > 24L * 3600 * 1000) {
          return InvalidArgumentError("wants milliseconds in [1, 86400000], got '" + text + "'");
        }
        return std::chrono::milliseconds(v);
      },
      "per-collective timeout; a hung peer fails the run after it", std::to_string(o.timeout.count()));
  cli::AddParsed<gloo::AllreducePolicy>(
      *app, "--allreduce-algorithm", &o.allreduce, Via<gloo::AllreducePolicy>(gloo::ParseAllreducePolicy),
      "gloo: exact (bit-identical to torch's Gloo) | bcube (opt-in: BCube over TCP up to 1M per rank, "
      "another order of additions; with --no-shared-memory, as between hosts); "
      "default: RINGMASTER_ALLREDUCE_ALGORITHM or exact",
      "exact");
  app->add_flag("--no-shared-memory", o.no_shared_memory,
                "gloo: ranks allreduce over TCP even on one host (the path before shared memory)");
  AddFusionFlags(*app, o);
  return app;
}

}  // namespace

std::string Usage() { return cli::UsageOf<PerfOptions>(NewPerfApp); }

StatusOr<uint64_t> ParseByteSize(const std::string& text) {
  if (text.empty()) return InvalidArgumentError("empty size");
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0) return InvalidArgumentError("size '" + text + "' does not start with a number");
  uint64_t value = std::strtoull(text.substr(0, pos).c_str(), nullptr, 10);
  std::string suffix = text.substr(pos);
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB")
    mult = 1ull << 30;
  else
    return InvalidArgumentError("size '" + text + "' has an unknown unit (use K, M or G)");
  if (value == 0) return InvalidArgumentError("size '" + text + "' must be positive");
  return value * mult;
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"", "K", "M", "G"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(v), units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f%s", v, units[u]);
  }
  return buf;
}

StatusOr<PerfOptions> ParsePerfOptions(const std::vector<std::string>& args) {
  RINGMASTER_ASSIGN_OR_RETURN(PerfOptions o, cli::ParseInto<PerfOptions>(NewPerfApp, args));
  if (o.help) return o;
  if (o.min_bytes > o.max_bytes) return InvalidArgumentError("--min-bytes is larger than --max-bytes");
  if (o.root >= o.np) return InvalidArgumentError("--root must be below --np");
  return o;
}

}  // namespace ringmaster::perf
