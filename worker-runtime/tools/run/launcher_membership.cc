#include "worker-runtime/tools/run/launcher_membership.h"

#include <algorithm>

namespace ringmaster::run {

namespace {
constexpr char kWorkerHost[] = "127.0.0.1";  // every worker listens on loopback
}  // namespace

api::Membership BuildMembershipRecord(const api::Membership& published, const std::string& reason,
                                      const WorkerTable& table) {
  const std::vector<std::string>& members = table.members();
  auto is_member = [&](const std::string& id) {
    return std::find(members.begin(), members.end(), id) != members.end();
  };
  std::vector<api::Member> joiners;
  for (const std::string& id : members) {
    if (published.Find(id) != nullptr) continue;
    const Worker* w = table.ById(id);
    joiners.push_back({w->id, std::to_string(w->pid()), 0, kWorkerHost, w->node});
  }
  api::Membership r = api::NextMembership(
      published, [&](const api::Member& m) { return is_member(m.pod) ? std::optional<api::Member>(m) : std::nullopt; },
      std::move(joiners),
      [&](const api::Member& rank0) { return api::CoordinatorAddress(rank0, table.ById(rank0.pod)->port); });
  r.reason = reason;
  return r;
}

}  // namespace ringmaster::run
