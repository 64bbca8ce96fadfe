#include "api/progress_report.h"

#include <nlohmann/json.hpp>

#include "base/time_format.h"

namespace ringmaster::api {

using json = nlohmann::json;

namespace {

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError("progress report: " + field + ": " + what);
}

// An integer field >= `min`.
Status ReadCount(const json& j, const char* key, int64_t min, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return Bad(key, "expected an integer");
  const int64_t v = it->get<int64_t>();
  if (v < min) return Bad(key, "must be >= " + std::to_string(min) + ", got " + std::to_string(v));
  *out = v;
  return Status::Ok();
}

// A number of seconds >= 0.
Status ReadSeconds(const json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return Bad(key, "expected a number");
  const double v = it->get<double>();
  if (!(v >= 0)) return Bad(key, "must be >= 0");
  *out = v;
  return Status::Ok();
}

Status ReadText(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) return Bad(key, "expected a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

std::string EncodeProgressReport(const ProgressReport& r) {
  return json{{"generation", r.generation},          {"reporter", r.reporter},
              {"worldSize", r.world_size},           {"firstStep", r.first_step},
              {"firstStepAt", r.first_step_at},      {"resumedFrom", r.resumed_from},
              {"restoredFrom", r.restored_from},     {"replayedSteps", r.replayed_steps},
              {"rebuildSeconds", r.rebuild_seconds}, {"restoreSeconds", r.restore_seconds},
              {"stepSeconds", r.step_seconds}}
      .dump();
}

StatusOr<ProgressReport> DecodeProgressReport(std::string_view value) {
  const json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("progress report: not a JSON object");
  ProgressReport r;
  RINGMASTER_RETURN_IF_ERROR(ReadCount(j, "generation", 1, &r.generation));
  RINGMASTER_RETURN_IF_ERROR(ReadText(j, "reporter", &r.reporter));
  int64_t world = 0;
  RINGMASTER_RETURN_IF_ERROR(ReadCount(j, "worldSize", 1, &world));
  if (world > INT32_MAX) return Bad("worldSize", "too large");
  r.world_size = static_cast<int32_t>(world);
  RINGMASTER_RETURN_IF_ERROR(ReadCount(j, "firstStep", 0, &r.first_step));
  RINGMASTER_RETURN_IF_ERROR(ReadText(j, "firstStepAt", &r.first_step_at));
  if (!ParseRfc3339(r.first_step_at)) return Bad("firstStepAt", "not an RFC 3339 time in UTC: " + r.first_step_at);
  RINGMASTER_RETURN_IF_ERROR(ReadCount(j, "resumedFrom", 0, &r.resumed_from));
  RINGMASTER_RETURN_IF_ERROR(ReadText(j, "restoredFrom", &r.restored_from));
  if (r.restored_from != restored_from::kPeer && r.restored_from != restored_from::kCheckpoint &&
      r.restored_from != restored_from::kInitial) {
    return Bad("restoredFrom", "expected peer, checkpoint or initial, got " + r.restored_from);
  }
  RINGMASTER_RETURN_IF_ERROR(ReadCount(j, "replayedSteps", 0, &r.replayed_steps));
  RINGMASTER_RETURN_IF_ERROR(ReadSeconds(j, "rebuildSeconds", &r.rebuild_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadSeconds(j, "restoreSeconds", &r.restore_seconds));
  RINGMASTER_RETURN_IF_ERROR(ReadSeconds(j, "stepSeconds", &r.step_seconds));
  return r;
}

}  // namespace ringmaster::api
