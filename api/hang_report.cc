#include "api/hang_report.h"

#include <nlohmann/json.hpp>

#include "base/time_format.h"

namespace ringmaster::api {

using json = nlohmann::json;

namespace {

constexpr std::string_view kKeyPrefix = "_hung.";

// A number >= 0 (integers too) under `key`.
Status ReadNonNegative(const json& j, const std::string& where, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !(it->get<double>() >= 0))
    return InvalidArgumentError(where + ": " + key + ": expected a number >= 0");
  *out = it->get<double>();
  return Status::Ok();
}

}  // namespace

std::string HangReportKey(std::string_view pod) { return std::string(kKeyPrefix) + std::string(pod); }

std::optional<std::string> HangReporterOfKey(std::string_view key) {
  if (key.size() <= kKeyPrefix.size() || key.substr(0, kKeyPrefix.size()) != kKeyPrefix) return std::nullopt;
  return std::string(key.substr(kKeyPrefix.size()));
}

std::string HangReportFileName(std::string_view worker) { return "hang." + std::string(worker) + ".json"; }

std::optional<std::string> HangReporterOfFileName(std::string_view file) {
  constexpr std::string_view kHead = "hang.", kTail = ".json";
  if (file.size() <= kHead.size() + kTail.size() || file.substr(0, kHead.size()) != kHead ||
      file.substr(file.size() - kTail.size()) != kTail) {
    return std::nullopt;
  }
  return std::string(file.substr(kHead.size(), file.size() - kHead.size() - kTail.size()));
}

std::string EncodeHangReport(const HangReport& r) {
  json j = {{"generation", r.generation},
            {"stalledSeconds", r.stalled_seconds},
            {"medianStepSeconds", r.median_step_seconds},
            {"step", r.step}};
  if (!r.reported_at.empty()) j["reportedAt"] = r.reported_at;
  return j.dump();
}

StatusOr<HangReport> DecodeHangReport(const std::string& reporter, std::string_view value) {
  const std::string where = "hang report of " + reporter;
  const json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(where + ": not a JSON object");
  HangReport r;
  r.reporter = reporter;
  if (!j.contains("generation") || !j["generation"].is_number_integer() || j["generation"].get<int64_t>() < 1)
    return InvalidArgumentError(where + ": generation: expected an integer >= 1");
  r.generation = j["generation"].get<int64_t>();
  RINGMASTER_RETURN_IF_ERROR(ReadNonNegative(j, where, "stalledSeconds", &r.stalled_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadNonNegative(j, where, "medianStepSeconds", &r.median_step_seconds));
  if (j.contains("step")) {
    if (!j["step"].is_number_integer() || j["step"].get<int64_t>() < 0)
      return InvalidArgumentError(where + ": step: expected an integer >= 0");
    r.step = j["step"].get<int64_t>();
  }
  if (j.contains("reportedAt")) {
    if (!j["reportedAt"].is_string() || !ParseRfc3339(j["reportedAt"].get<std::string>()))
      return InvalidArgumentError(where + ": reportedAt: expected an RFC 3339 time in UTC");
    r.reported_at = j["reportedAt"].get<std::string>();
  }
  return r;
}

}  // namespace ringmaster::api
