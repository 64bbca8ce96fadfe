// libFuzzer target: the membership record as a worker reads it -- the launcher's membership file
// (api::ParseMembership) and a TrainingJob's status.membership (api::MembershipOfJob). Never a crash or
// an exception; a record that parses is well-formed (ranks 0..n-1, generation >= 0, every member named)
// and survives MembershipToJson -> text -> ParseMembership unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/membership.h"

using ringmaster::StatusCode;
using ringmaster::api::Membership;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckRecord(const Membership& m) {
  Check(m.generation >= 0);
  for (size_t i = 0; i < m.members.size(); ++i) {
    Check(m.members[i].rank == static_cast<int32_t>(i) && !m.members[i].pod.empty());
  }
  auto again = ringmaster::api::ParseMembership(ringmaster::api::MembershipToJson(m).dump());
  Check(again.ok() && *again == m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = ringmaster::api::ParseMembership(text);
  if (record.ok()) {
    CheckRecord(*record);
  } else {
    Check(record.status().code() == StatusCode::kInvalidArgument && !record.status().message().empty());
  }
  // The same document as a whole TrainingJob, and wrapped as one's status.membership.
  const nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  for (const nlohmann::json& job : {doc, nlohmann::json{{"status", {{"membership", doc}}}}}) {
    auto of_job = ringmaster::api::MembershipOfJob(job);
    if (!of_job.ok()) {
      Check(of_job.status().code() == StatusCode::kInvalidArgument && !of_job.status().message().empty());
    } else if (of_job->has_value()) {
      CheckRecord(**of_job);
    }
  }
  return 0;
}
