// What the workers and the operator say about a job's progress, for people:
//
// - The progress record (api/progress_report.h): rank 0 of each generation writes it once the generation's first
//   step commits, in the job's peer-reports ConfigMap (api::PeerReportsName(job)), key "_progress".
// - The job's status.goodput (api/training_job.h Goodput; operator/controller/goodput.h accounts it).
//
// Either may be absent (a runtime or operator that predates them, a job that has not run yet): the lines say
// "not reported yet".
//
// Errors: ProgressOfConfigMap returns api::DecodeProgressReport's InvalidArgument for a value that does not
// decode. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/progress_report.h"
#include "api/training_job.h"
#include "base/status.h"

namespace ringmaster::kubectl_plugin {

// The record in a peer-reports ConfigMap object: nullopt when it has no "_progress" key.
StatusOr<std::optional<api::ProgressReport>> ProgressOfConfigMap(const nlohmann::json& config_map);

// The goodput as lines, for `status`: the ratio with productive and wall time, what failures cost by phase, the
// last recovery, a recovery under way; {"not reported yet"} for nullopt.
std::vector<std::string> FormatGoodput(const std::optional<api::Goodput>& goodput);

// One line, for the drill's comparison: "last recovery 4.1s; lost: detect 2.0s, ... (3 failures); goodput 92.8%";
// "not reported yet (status.goodput)" for nullopt.
std::string GoodputHistory(const std::optional<api::Goodput>& goodput);

}  // namespace ringmaster::kubectl_plugin
