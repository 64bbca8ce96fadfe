#include "worker-runtime/elastic/process_set_rules.h"

#include <algorithm>
#include <map>
#include <set>

namespace ringmaster::elastic {

ProcessSetRule SetOfWorkers(std::string name, std::vector<std::string> worker_ids) {
  return [name = std::move(name),
          ids = std::set<std::string>(worker_ids.begin(), worker_ids.end())](const api::Membership& record) {
    NamedProcessSet set{name, {}};
    for (const auto& m : record.members) {
      if (ids.count(m.id())) set.ranks.push_back(m.rank);
    }
    std::sort(set.ranks.begin(), set.ranks.end());
    return std::vector<NamedProcessSet>{std::move(set)};
  };
}

ProcessSetRule SetOfRanks(std::string name, std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return [name = std::move(name), ranks = std::move(ranks)](const api::Membership& record) {
    NamedProcessSet set{name, {}};
    for (int r : ranks) {
      if (r >= 0 && r < record.world_size()) set.ranks.push_back(r);
    }
    return std::vector<NamedProcessSet>{std::move(set)};
  };
}

ProcessSetRule SetsPerNode() {
  return [](const api::Membership& record) {
    std::map<std::string, std::vector<int>> by_node;  // ordered by node name: the same order on every rank
    for (const auto& m : record.members) by_node[m.node].push_back(m.rank);
    std::vector<NamedProcessSet> sets;
    NamedProcessSet leaders{"node-leaders", {}};
    for (auto& [node, ranks] : by_node) {
      std::sort(ranks.begin(), ranks.end());
      leaders.ranks.push_back(ranks.front());
      sets.push_back({"node:" + node, ranks});
    }
    std::sort(leaders.ranks.begin(), leaders.ranks.end());
    sets.push_back(std::move(leaders));
    return sets;
  };
}

int LocalRank(const api::Membership& record, const std::string& id) {
  const api::Member* self = record.Find(id);
  if (self == nullptr) return 0;
  const std::string host = api::HostOf(*self);
  int below = 0;
  for (const auto& m : record.members) below += m.rank < self->rank && api::HostOf(m) == host;
  return below;
}

int LocalSize(const api::Membership& record, const std::string& id) {
  const api::Member* self = record.Find(id);
  if (self == nullptr) return 0;
  const std::string host = api::HostOf(*self);
  int size = 0;
  for (const auto& m : record.members) size += api::HostOf(m) == host;
  return size;
}

StatusOr<std::vector<NamedProcessSet>> EvaluateProcessSetRules(const std::vector<ProcessSetRule>& rules,
                                                               const api::Membership& record) {
  std::vector<NamedProcessSet> out;
  std::set<std::string> names;
  for (const auto& rule : rules) {
    for (auto& set : rule(record)) {
      if (!names.insert(set.name).second) {
        return InvalidArgumentError("process set '" + set.name +
                                    "' is defined twice; give each rule's sets distinct names");
      }
      if (!set.ranks.empty()) out.push_back(std::move(set));
    }
  }
  return out;
}

}  // namespace ringmaster::elastic
