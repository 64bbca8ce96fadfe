#include "worker-runtime/process_sets/process_set_table.h"

namespace ringmaster::process_sets {
namespace {

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

}  // namespace

Status ProcessSetTable::Add(ProcessSet set) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sets_.count(set.id)) return AlreadyExistsError("process set " + std::to_string(set.id) + " already exists");
  int id = set.id;
  sets_.emplace(id, std::move(set));
  return Status::Ok();
}

StatusOr<ProcessSet> ProcessSetTable::Remove(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id == 0) return InvalidArgumentError("the world process set (id 0) cannot be removed");
  auto it = sets_.find(id);
  if (it == sets_.end()) return InvalidArgumentError("no process set with id " + std::to_string(id));
  ProcessSet set = std::move(it->second);
  sets_.erase(it);
  return set;
}

StatusOr<std::shared_ptr<fusion::Engine>> ProcessSetTable::EngineFor(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return InvalidArgumentError("no process set with id " + std::to_string(id));
  if (!it->second.engine) {
    return FailedPreconditionError("rank " + std::to_string(world_rank_) + " is not a member of process set " +
                                   std::to_string(id) + " '" + it->second.name + "' (ranks " +
                                   RankList(it->second.ranks) + ")");
  }
  return it->second.engine;
}

StatusOr<std::vector<int>> ProcessSetTable::Ranks(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return InvalidArgumentError("no process set with id " + std::to_string(id));
  return it->second.ranks;
}

std::vector<int> ProcessSetTable::Ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> ids;
  for (const auto& [id, set] : sets_) ids.push_back(id);
  return ids;
}

std::vector<ProcessSet> ProcessSetTable::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProcessSet> all;
  for (auto& [id, set] : sets_) all.push_back(std::move(set));
  sets_.clear();
  return all;
}

}  // namespace ringmaster::process_sets
