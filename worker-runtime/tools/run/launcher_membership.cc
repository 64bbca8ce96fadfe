#include "tools/run/launcher_membership.h"

namespace ringmaster::elastic {

membership::MembershipRecord BuildMembershipRecord(int64_t generation, const std::string& reason,
                                                   const WorkerTable& table) {
  membership::MembershipRecord r;
  r.generation = generation;
  r.reason = reason;
  const std::vector<std::string>& members = table.members();
  for (size_t i = 0; i < members.size(); ++i) {
    Worker* w = table.ById(members[i]);
    std::string address = "127.0.0.1:" + std::to_string(w->port);
    r.members.push_back({w->id, std::to_string(w->pid()), static_cast<int32_t>(i), address, w->node});
  }
  if (!r.members.empty()) r.coordinator = r.members[0].address;
  return r;
}

}  // namespace ringmaster::elastic
