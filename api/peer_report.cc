#include "api/peer_report.h"

#include <nlohmann/json.hpp>

namespace ringmaster::api {

std::string PeerReportsName(std::string_view job) { return std::string(job) + "-peer-reports"; }

std::string EncodePeerReport(const PeerReport& report) {
  nlohmann::json j = {{"generation", report.generation}, {"unreachable", report.unreachable}};
  if (!report.reported_at.empty()) j["reportedAt"] = report.reported_at;
  return j.dump();
}

StatusOr<PeerReport> DecodePeerReport(const std::string& reporter, std::string_view value) {
  const std::string where = "peer report of " + reporter;
  nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(where + ": not a JSON object");
  PeerReport r;
  r.reporter = reporter;
  if (!j.contains("generation") || !j["generation"].is_number_integer() || j["generation"].get<int64_t>() < 1) {
    return InvalidArgumentError(where + ": generation must be an integer >= 1");
  }
  r.generation = j["generation"].get<int64_t>();
  const auto& u = j.contains("unreachable") ? j["unreachable"] : nlohmann::json::array();
  if (!u.is_array()) return InvalidArgumentError(where + ": unreachable must be a list of pod names");
  for (const auto& pod : u) {
    if (!pod.is_string() || pod.get<std::string>().empty()) {
      return InvalidArgumentError(where + ": unreachable must be a list of pod names");
    }
    r.unreachable.push_back(pod.get<std::string>());
  }
  if (j.contains("reportedAt") && j["reportedAt"].is_string()) r.reported_at = j["reportedAt"].get<std::string>();
  return r;
}

}  // namespace ringmaster::api
