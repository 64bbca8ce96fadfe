// libFuzzer target: a worker's peer report as the operator reads it from the job's peer-reports ConfigMap
// (api::DecodePeerReport). Any worker of the job can write any bytes there, so: never a crash or an
// exception; a report that decodes names a generation >= 1 and only non-empty pods, and survives
// EncodePeerReport -> DecodePeerReport unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/peer_report.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto report = ringmaster::api::DecodePeerReport("w-0", text);
  if (!report.ok()) {
    Check(report.status().code() == ringmaster::StatusCode::kInvalidArgument && !report.status().message().empty());
    return 0;
  }
  Check(report->generation >= 1 && report->reporter == "w-0");
  for (const auto& pod : report->unreachable) Check(!pod.empty());
  auto again = ringmaster::api::DecodePeerReport("w-0", ringmaster::api::EncodePeerReport(*report));
  Check(again.ok() && *again == *report);
  return 0;
}
