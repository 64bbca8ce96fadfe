// The machine-readable side of a benchmark: what `--json PATH` writes, read by `make bench-report`
// (bench/bench_report.py, which documents the shape; bench/README.md says how to read the report).
// Library ringmaster_bench_json, linked by the C++ benches (ringmaster-{elastic,checkpoint,operator}-bench);
// the Python benches write the same shape (bench/bench_json.py).
//
//   {"bench": "runtime", "command": "...", "started": "2026-...Z", "finished": "...", "cores": 2,
//    "load_start": [1.5, 1.2, 1.1], "load_end": [...],
//    "figures": [{"id": "runtime.total.8", "name": "...", "unit": "ms", "ours": 85.1, "peer": null,
//                 "peer_name": "", "ratio": null, "load": "...", "note": "",
//                 "goal": {"of": "ours", "op": "<=", "bound": 100, "text": "<= 100 ms"}}, ...],
//    "series": {"recovery_phases": [...]}}
//
// Not thread-safe; one Report per bench run.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace ringmaster::bench {

// A goal the report checks: `of` ("ours" or "ratio") `op` ("<=" or ">=") `bound`; `text` is what it prints.
struct Goal {
  std::string of;
  std::string op;
  double bound = 0;
  std::string text;
};
inline Goal OursAtMost(double bound, std::string text) { return {"ours", "<=", bound, std::move(text)}; }
inline Goal RatioAtMost(double bound, std::string text) { return {"ratio", "<=", bound, std::move(text)}; }
inline Goal RatioAtLeast(double bound, std::string text) { return {"ratio", ">=", bound, std::move(text)}; }

// [1, 5, 15 min] or null.
nlohmann::json LoadAverageJson();

// The current time in UTC, e.g. "2026-11-25T05:23:34Z".
std::string UtcNow();

// `v` as a number, or null.
nlohmann::json Optional(const std::optional<double>& v);

class Report {
 public:
  // Notes the start: time, load average, cores and the command line.
  Report(std::string bench, int argc, char** argv);

  // One figure. ratio defaults to ours / peer when both are there. Returns it, to add "load" or "note".
  nlohmann::json& Figure(const std::string& id, const std::string& name, const std::string& unit,
                         std::optional<double> ours, std::optional<double> peer = std::nullopt,
                         const std::string& peer_name = "", std::optional<Goal> goal = std::nullopt,
                         std::optional<double> ratio = std::nullopt);

  // Raw rows for the plots, e.g. Series("recovery_phases").push_back({...}).
  nlohmann::json& Series(const std::string& name);

  // Adds the end (time, load average) and writes `path` (its folder created; written whole, then renamed).
  // An empty path writes nothing. False, with a line on stderr, when it cannot be written.
  bool Write(const std::string& path);

 private:
  nlohmann::json doc_;
};

}  // namespace ringmaster::bench
