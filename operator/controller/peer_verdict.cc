#include "operator/controller/peer_verdict.h"

#include <algorithm>
#include <map>
#include <set>

namespace ringmaster::controller {

std::vector<CutOffMember> CutOffMembers(const api::Membership& membership, const std::vector<api::PeerReport>& reports,
                                        const std::set<std::string>& ready) {
  std::set<std::string> members;
  for (const auto& m : membership.members) members.insert(m.pod);
  std::map<std::string, std::set<std::string>> accusers;  // pod -> members that cannot reach it
  std::set<std::pair<std::string, std::string>> broken;   // unordered pairs with a report between them
  for (const auto& r : reports) {
    if (r.generation != membership.generation || !members.count(r.reporter)) continue;
    for (const auto& pod : r.unreachable) {
      if (pod == r.reporter || !members.count(pod)) continue;
      broken.insert(std::minmax(pod, r.reporter));
      // In a world of two one report is a majority: there a NotReady member's word does not count against a
      // Ready one (the kubelet cannot reach the reporter either, so the broken link is most likely its own),
      // or the cut rank 0 reporting first would drop its healthy peer. In larger worlds a majority takes
      // several reporters, and the tie-break below keeps the kept members connected.
      if (members.size() == 2 && !ready.count(r.reporter) && ready.count(pod)) continue;
      accusers[pod].insert(r.reporter);
    }
  }
  const size_t others = members.size() - 1;
  auto suspect = [&](const std::string& pod) {
    auto it = accusers.find(pod);
    return it != accusers.end() && 2 * it->second.size() > others;
  };
  std::vector<std::string> kept;
  for (const auto& m : membership.members)
    if (!suspect(m.pod)) kept.push_back(m.pod);
  // Suspects, Ready first, rank order among equals (members are in rank order; the sort is stable).
  std::vector<const api::Member*> suspects;
  for (const auto& m : membership.members)
    if (suspect(m.pod)) suspects.push_back(&m);
  std::stable_sort(suspects.begin(), suspects.end(), [&](const api::Member* a, const api::Member* b) {
    return ready.count(a->pod) > ready.count(b->pod);
  });
  std::set<std::string> dropped;
  for (const api::Member* m : suspects) {
    bool linked_to_kept = false;
    for (const auto& k : kept) linked_to_kept |= broken.count(std::minmax(m->pod, k)) > 0;
    if (linked_to_kept) {
      dropped.insert(m->pod);
    } else {
      kept.push_back(m->pod);
    }
  }
  std::vector<CutOffMember> out;
  for (const auto& m : membership.members) {
    if (!dropped.count(m.pod)) continue;
    const auto& by = accusers[m.pod];
    out.push_back({m.pod, std::vector<std::string>(by.begin(), by.end())});
  }
  return out;
}

}  // namespace ringmaster::controller
