#include "tools/perf/perf_options.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace ringmaster::runtime::perf {

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

std::string Usage() {
  return R"(usage: ringmaster-perf COLLECTIVE [flags]

Starts --np local ranks over loopback (127.0.0.1), runs COLLECTIVE for every
buffer size from --min-bytes to --max-bytes and prints, per size, the time,
algorithm bandwidth and bus bandwidth (nccl-tests formulas) and, with --check,
the number of wrong result elements. Exits non-zero when any result is wrong
or a rank fails.

COLLECTIVE: allreduce | allgather | broadcast | reduce-scatter | fusion

`fusion` submits --tensors allreduces of --tensor-bytes each asynchronously
through the runtime, once with tensor fusion and once without, and prints both.

flags:
  --np N             number of local ranks (default 2)
  --backend B        gloo | nccl | auto (default gloo; nccl needs one GPU per rank)
  --min-bytes S      smallest buffer, e.g. 1K, 64M, 1G (default 1K)
  --max-bytes S      largest buffer (default 64M)
  --step-factor F    multiply the size by F between steps, F > 1 (default 2)
  --iters N          timed iterations per size (default: about 256M of traffic, 1..50)
  --warmup N         untimed iterations per size (default 1)
  --in-place         run in place (output buffer = input buffer) instead of out of place
  --check            verify every result against a reference and count wrong elements
  --dtype T          float32 float64 float16 bfloat16 int32 int64 uint8 (default float32)
  --op OP            sum avg min max product (allreduce, reduce-scatter; default sum)
  --root R           broadcast root (default 0)
  --timeout-ms MS    per-collective timeout; a hung peer fails the run after it (default 60000)
  --tensors N        fusion: allreduces per round (default 1000)
  --tensor-bytes S   fusion: bytes per tensor (default 4K)
  --fusion-threshold S  fusion: fusion buffer size (default 64M)
  --help             this text

Size is the buffer a rank holds: allreduce and broadcast count*size(T); allgather
the gathered output, reduce-scatter the input (both np*count*size(T)).
busbw = algbw * factor, factor = 2(n-1)/n allreduce, (n-1)/n allgather and
reduce-scatter, 1 broadcast.
)";
}

StatusOr<uint64_t> ParseByteSize(const std::string& text) {
  if (text.empty()) return InvalidArgumentError("empty size");
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0) return InvalidArgumentError("size '" + text + "' does not start with a number");
  uint64_t value = std::strtoull(text.substr(0, pos).c_str(), nullptr, 10);
  std::string suffix = text.substr(pos);
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = 1ull << 30;
  else return InvalidArgumentError("size '" + text + "' has an unknown unit (use K, M or G)");
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

namespace {

StatusOr<long> ParseInt(const std::string& flag, const std::string& value, long min, long max) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < min || v > max) {
    return InvalidArgumentError(flag + " wants an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                "], got '" + value + "'");
  }
  return v;
}

}  // namespace

StatusOr<PerfOptions> ParsePerfOptions(const std::vector<std::string>& args) {
  PerfOptions o;
  bool have_collective = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      o.help = true;
      return o;
    }
    if (a == "--check") {
      o.check = true;
      continue;
    }
    if (a == "--in-place") {
      o.in_place = true;
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      std::string flag = a, value;
      if (size_t eq = a.find('='); eq != std::string::npos) flag = a.substr(0, eq);
      static const char* const kValueFlags[] = {"--np",    "--backend", "--min-bytes", "--max-bytes", "--step-factor",
                                                "--iters", "--warmup",  "--dtype",     "--op",        "--root",
                                                "--timeout-ms", "--tensors", "--tensor-bytes", "--fusion-threshold"};
      bool known = false;
      for (const char* f : kValueFlags) known = known || flag == f;
      if (!known) return InvalidArgumentError("unknown flag '" + flag + "' (see --help)");
      if (size_t eq = a.find('='); eq != std::string::npos) {
        flag = a.substr(0, eq);
        value = a.substr(eq + 1);
      } else {
        if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value (see --help)");
        value = args[++i];
      }
      if (flag == "--np") {
        RINGMASTER_ASSIGN_OR_RETURN(long v, ParseInt(flag, value, 1, 256));
        o.np = static_cast<int>(v);
      } else if (flag == "--backend") {
        RINGMASTER_ASSIGN_OR_RETURN(o.backend, ParseBackend(value));
      } else if (flag == "--min-bytes") {
        RINGMASTER_ASSIGN_OR_RETURN(o.min_bytes, ParseByteSize(value));
      } else if (flag == "--max-bytes") {
        RINGMASTER_ASSIGN_OR_RETURN(o.max_bytes, ParseByteSize(value));
      } else if (flag == "--step-factor") {
        char* end = nullptr;
        o.step_factor = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(o.step_factor > 1.0)) {
          return InvalidArgumentError("--step-factor wants a number > 1, got '" + value + "'");
        }
      } else if (flag == "--iters") {
        RINGMASTER_ASSIGN_OR_RETURN(long v, ParseInt(flag, value, 1, 1000000));
        o.iters = static_cast<int>(v);
      } else if (flag == "--warmup") {
        RINGMASTER_ASSIGN_OR_RETURN(long v, ParseInt(flag, value, 0, 1000000));
        o.warmup = static_cast<int>(v);
      } else if (flag == "--dtype") {
        RINGMASTER_ASSIGN_OR_RETURN(o.type, ParseDataType(value));
      } else if (flag == "--op") {
        RINGMASTER_ASSIGN_OR_RETURN(o.op, ParseReduceOp(value));
      } else if (flag == "--root") {
        RINGMASTER_ASSIGN_OR_RETURN(long v, ParseInt(flag, value, 0, 255));
        o.root = static_cast<int>(v);
      } else if (flag == "--tensors") {
        RINGMASTER_ASSIGN_OR_RETURN(long v, ParseInt(flag, value, 1, 1000000));
        o.tensors = static_cast<int>(v);
      } else if (flag == "--tensor-bytes") {
        RINGMASTER_ASSIGN_OR_RETURN(o.tensor_bytes, ParseByteSize(value));
      } else if (flag == "--fusion-threshold") {
        RINGMASTER_ASSIGN_OR_RETURN(o.fusion_threshold, ParseByteSize(value));
      } else if (flag == "--timeout-ms") {
        RINGMASTER_ASSIGN_OR_RETURN(long v, ParseInt(flag, value, 1, 24L * 3600 * 1000));
        o.timeout = std::chrono::milliseconds(v);
      } else {
        return InvalidArgumentError("unknown flag '" + flag + "' (see --help)");
      }
      continue;
    }
    if (have_collective) return InvalidArgumentError("unexpected argument '" + a + "' (see --help)");
    have_collective = true;
    if (a == "allreduce") o.collective = Collective::kAllreduce;
    else if (a == "allgather") o.collective = Collective::kAllgather;
    else if (a == "broadcast") o.collective = Collective::kBroadcast;
    else if (a == "reduce-scatter" || a == "reducescatter") o.collective = Collective::kReduceScatter;
    else if (a == "fusion") o.collective = Collective::kFusion;
    else return InvalidArgumentError("unknown collective '" + a + "' (want allreduce, allgather, broadcast, reduce-scatter or fusion)");
  }
  if (!have_collective) return InvalidArgumentError("missing COLLECTIVE (see --help)");
  if (o.min_bytes > o.max_bytes) return InvalidArgumentError("--min-bytes is larger than --max-bytes");
  if (o.root >= o.np) return InvalidArgumentError("--root must be below --np");
  return o;
}

}  // namespace ringmaster::runtime::perf
