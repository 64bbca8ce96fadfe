// The machine-readable side of a benchmark: what `--json PATH` writes, read by `make bench-report`
// (tests/bench/bench_report.py, which documents the shape; tests/bench/README.md says how to read the report).
// Header-only, shared by the C++ benches (ringmaster-{elastic,checkpoint,operator}-bench); the Python benches
// write the same shape (worker-runtime/python/bench/bench_json.py).
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

#include <stdlib.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace ringmaster::bench_json {

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
inline nlohmann::json LoadAverage() {
  double l[3] = {0, 0, 0};
  if (::getloadavg(l, 3) != 3) return nullptr;
  return nlohmann::json::array({l[0], l[1], l[2]});
}

inline std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline nlohmann::json Optional(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

class Report {
 public:
  // Notes the start: time, load average, cores and the command line.
  Report(std::string bench, int argc, char** argv) {
    std::string command;
    for (int i = 0; i < argc; ++i) {
      std::string a = argv[i];
      if (a.find_first_of(" \t'\"") != std::string::npos) a = "'" + a + "'";
      command += (i ? " " : "") + a;
    }
    doc_ = {{"bench", std::move(bench)},
            {"command", command},
            {"started", UtcNow()},
            {"cores", static_cast<int>(std::thread::hardware_concurrency())},
            {"load_start", LoadAverage()},
            {"figures", nlohmann::json::array()},
            {"series", nlohmann::json::object()}};
  }

  // One figure. ratio defaults to ours / peer when both are there. Returns it, to add "load" or "note".
  nlohmann::json& Figure(const std::string& id, const std::string& name, const std::string& unit,
                         std::optional<double> ours, std::optional<double> peer = std::nullopt,
                         const std::string& peer_name = "", std::optional<Goal> goal = std::nullopt,
                         std::optional<double> ratio = std::nullopt) {
    if (!ratio && ours && peer && *peer > 0) ratio = *ours / *peer;
    nlohmann::json f = {{"id", id},          {"name", name},           {"unit", unit},
                        {"ours", Optional(ours)}, {"peer", Optional(peer)}, {"peer_name", peer_name},
                        {"ratio", Optional(ratio)}, {"goal", nullptr}};
    if (goal) f["goal"] = {{"of", goal->of}, {"op", goal->op}, {"bound", goal->bound}, {"text", goal->text}};
    doc_["figures"].push_back(std::move(f));
    return doc_["figures"].back();
  }

  // Raw rows for the plots, e.g. Series("recovery_phases").push_back({...}).
  nlohmann::json& Series(const std::string& name) {
    auto& s = doc_["series"][name];
    if (s.is_null()) s = nlohmann::json::array();
    return s;
  }

  // Adds the end (time, load average) and writes `path` (its folder created; written whole, then renamed).
  // An empty path writes nothing. False, with a line on stderr, when it cannot be written.
  bool Write(const std::string& path) {
    if (path.empty()) return true;
    doc_["finished"] = UtcNow();
    doc_["load_end"] = LoadAverage();
    std::error_code ec;
    const std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << doc_.dump(1) << "\n";
      if (!out.good()) {
        std::fprintf(stderr, "bench: cannot write %s\n", tmp.c_str());
        return false;
      }
    }
    std::filesystem::rename(tmp, p, ec);
    if (ec) {
      std::fprintf(stderr, "bench: cannot write %s: %s\n", path.c_str(), ec.message().c_str());
      return false;
    }
    return true;
  }

 private:
  nlohmann::json doc_;
};

}  // namespace ringmaster::bench_json
