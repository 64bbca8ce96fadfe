#include "membership/membership_source.h"

#include <algorithm>

namespace ringmaster::membership {

using json = nlohmann::json;

const MemberRecord* MembershipRecord::Find(const std::string& pod) const {
  for (const auto& m : members)
    if (m.pod == pod) return &m;
  return nullptr;
}

namespace {

std::string Str(const json& j, const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; }

}  // namespace

StatusOr<MembershipRecord> ParseMembershipRecord(const json& j) {
  MembershipRecord r;
  if (j.is_null()) return r;
  if (!j.is_object()) return InvalidArgumentError("membership is not a JSON object");
  if (j.contains("generation")) {
    if (!j["generation"].is_number_integer() || j["generation"].get<int64_t>() < 0) {
      return InvalidArgumentError("membership.generation must be a non-negative integer");
    }
    r.generation = j["generation"].get<int64_t>();
  }
  r.coordinator = Str(j, "coordinator");
  r.reason = Str(j, "reason");
  if (j.contains("members")) {
    if (!j["members"].is_array()) return InvalidArgumentError("membership.members must be a list");
    for (const auto& m : j["members"]) {
      if (!m.is_object() || !m.contains("rank") || !m["rank"].is_number_integer()) {
        return InvalidArgumentError("every membership.members[] entry needs an integer rank");
      }
      MemberRecord rec{Str(m, "pod"), Str(m, "uid"), m["rank"].get<int32_t>(), Str(m, "address"), Str(m, "node")};
      if (rec.pod.empty()) return InvalidArgumentError("membership.members[] entry with rank " + std::to_string(rec.rank) + " has no pod");
      r.members.push_back(std::move(rec));
    }
  }
  std::sort(r.members.begin(), r.members.end(), [](const MemberRecord& a, const MemberRecord& b) { return a.rank < b.rank; });
  for (size_t i = 0; i < r.members.size(); ++i) {
    if (r.members[i].rank != static_cast<int32_t>(i)) {
      return InvalidArgumentError("membership ranks must be 0.." + std::to_string(r.members.size() - 1) + " without gaps");
    }
  }
  if (j.contains("worldSize") && (!j["worldSize"].is_number_integer() || j["worldSize"].get<int64_t>() != r.world_size())) {
    return InvalidArgumentError("membership.worldSize disagrees with the member list (" + std::to_string(r.world_size()) + ")");
  }
  return r;
}

json MembershipRecordToJson(const MembershipRecord& r) {
  json members = json::array();
  for (const auto& m : r.members) {
    members.push_back({{"pod", m.pod}, {"uid", m.uid}, {"rank", m.rank}, {"address", m.address}, {"node", m.node}});
  }
  json j = {{"generation", r.generation}, {"worldSize", r.world_size()}, {"coordinator", r.coordinator}, {"members", members}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

}  // namespace ringmaster::membership
