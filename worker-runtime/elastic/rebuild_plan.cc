#include "worker-runtime/elastic/rebuild_plan.h"

#include <map>

namespace ringmaster::elastic {

RebuildPlan PlanRebuild(const api::Membership* previous, const api::Membership& next, bool can_shrink) {
  RebuildPlan plan;
  if (previous == nullptr) {
    plan.why = "no previous communicator";
    return plan;
  }
  if (!can_shrink) {
    plan.why = "the previous communicator cannot shrink (backend, NCCL < 2.27, or released)";
    return plan;
  }
  if (next.world_size() >= previous->world_size()) {
    plan.why = "the world does not shrink";
    return plan;
  }
  // Every member of `next` must be the same worker (pod and uid) as in `previous`, in the same
  // relative order -- then its new rank is what ncclCommShrink assigns.
  std::map<std::string, const api::Member*> before;
  for (const auto& m : previous->members) before[m.id()] = &m;
  int last_old_rank = -1;
  std::vector<bool> kept(previous->members.size(), false);
  for (const auto& m : next.members) {
    auto it = before.find(m.id());
    if (it == before.end() || it->second->uid != m.uid) {
      plan.why = "worker " + m.id() + " is new";
      return plan;
    }
    if (it->second->rank <= last_old_rank) {
      plan.why = "the survivors changed their order";
      return plan;
    }
    last_old_rank = it->second->rank;
    kept[it->second->rank] = true;
  }
  for (size_t r = 0; r < kept.size(); ++r) {
    if (!kept[r]) plan.excluded.push_back(static_cast<int>(r));
  }
  plan.shrink = true;
  plan.why = "only removals";
  return plan;
}

std::string ShrinkProposal(const RebuildPlan& plan, int64_t parent_incarnation) {
  if (!plan.shrink) return "fresh";
  std::string p = "shrink " + std::to_string(parent_incarnation) + " excluding";
  for (int r : plan.excluded) p += " " + std::to_string(r);
  return p;
}

StatusOr<bool> AgreeOnShrink(store::Store& store, const std::string& prefix, int rank, int size,
                             const std::string& proposal, std::chrono::milliseconds timeout) {
  RINGMASTER_RETURN_IF_ERROR(store.Set(prefix + "/" + std::to_string(rank), proposal));
  bool all_shrink = proposal != "fresh";
  for (int r = 0; r < size; ++r) {
    RINGMASTER_ASSIGN_OR_RETURN(std::string theirs, store.Get(prefix + "/" + std::to_string(r), timeout));
    all_shrink &= theirs == proposal;
  }
  return all_shrink;
}

}  // namespace ringmaster::elastic
