#include "operator/kubectl_plugin/progress.h"

#include <cstdio>

#include "base/json_path.h"
#include "operator/kubectl_plugin/durations.h"

namespace ringmaster::kubectl_plugin {

namespace {

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", ratio * 100);
  return buf;
}

std::string Span(double seconds) {
  return HumanDuration(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

std::string LostList(const api::LostSeconds& l) {
  return "detect " + FormatSeconds(l.detect) + ", reschedule " + FormatSeconds(l.reschedule) + ", rebuild " +
         FormatSeconds(l.rebuild) + ", restore " + FormatSeconds(l.restore) + ", replay " + FormatSeconds(l.replay);
}

std::string Failures(int64_t n) { return std::to_string(n) + (n == 1 ? " failure" : " failures"); }

}  // namespace

StatusOr<std::optional<api::ProgressReport>> ProgressOfConfigMap(const nlohmann::json& config_map) {
  const nlohmann::json& value = At(config_map, {"data", api::kProgressReportKey});
  if (!value.is_string()) return std::optional<api::ProgressReport>();
  RINGMASTER_ASSIGN_OR_RETURN(api::ProgressReport p, api::DecodeProgressReport(value.get<std::string>()));
  return std::optional<api::ProgressReport>(std::move(p));
}

std::vector<std::string> FormatGoodput(const std::optional<api::Goodput>& goodput) {
  if (!goodput) return {"not reported yet"};
  const api::Goodput& g = *goodput;
  std::string first =
      Percent(g.ratio) + " productive (" + Span(g.productive_seconds) + " of " + Span(g.wall_seconds) + " wall";
  if (!g.as_of.empty()) first += ", as of " + g.as_of;
  if (g.accounted_generation > 0) first += ", through generation " + std::to_string(g.accounted_generation);
  std::vector<std::string> lines = {first + ")"};
  lines.push_back("lost to " + Failures(g.failures) + ": " + LostList(g.lost_seconds));
  lines.push_back("last recovery: " +
                  (g.last_recovery_seconds ? FormatSeconds(*g.last_recovery_seconds) : std::string("none yet")));
  if (!g.recovering_since.empty()) lines.push_back("recovering from a failure at " + g.recovering_since);
  return lines;
}

std::string GoodputHistory(const std::optional<api::Goodput>& goodput) {
  if (!goodput) return "not reported yet (status.goodput)";
  const api::Goodput& g = *goodput;
  return "last recovery " +
         (g.last_recovery_seconds ? FormatSeconds(*g.last_recovery_seconds) : std::string("not reported yet")) +
         "; lost: " + LostList(g.lost_seconds) + " (" + Failures(g.failures) + "); goodput " + Percent(g.ratio);
}

}  // namespace ringmaster::kubectl_plugin
