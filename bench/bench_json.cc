#include "bench/bench_json.h"

#include <stdlib.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

namespace ringmaster::bench {

nlohmann::json LoadAverageJson() {
  double l[3] = {0, 0, 0};
  if (::getloadavg(l, 3) != 3) return nullptr;
  return nlohmann::json::array({l[0], l[1], l[2]});
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json Optional(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

Report::Report(std::string bench, int argc, char** argv) {
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
          {"load_start", LoadAverageJson()},
          {"figures", nlohmann::json::array()},
          {"series", nlohmann::json::object()}};
}

nlohmann::json& Report::Figure(const std::string& id, const std::string& name, const std::string& unit,
                               std::optional<double> ours, std::optional<double> peer, const std::string& peer_name,
                               std::optional<Goal> goal, std::optional<double> ratio) {
  if (!ratio && ours && peer && *peer > 0) ratio = *ours / *peer;
  nlohmann::json f = {{"id", id},
                      {"name", name},
                      {"unit", unit},
                      {"ours", Optional(ours)},
                      {"peer", Optional(peer)},
                      {"peer_name", peer_name},
                      {"ratio", Optional(ratio)},
                      {"goal", nullptr}};
  if (goal) f["goal"] = {{"of", goal->of}, {"op", goal->op}, {"bound", goal->bound}, {"text", goal->text}};
  doc_["figures"].push_back(std::move(f));
  return doc_["figures"].back();
}

nlohmann::json& Report::Series(const std::string& name) {
  auto& s = doc_["series"][name];
  if (s.is_null()) s = nlohmann::json::array();
  return s;
}

bool Report::Write(const std::string& path) {
  if (path.empty()) return true;
  doc_["finished"] = UtcNow();
  doc_["load_end"] = LoadAverageJson();
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

}  // namespace ringmaster::bench
