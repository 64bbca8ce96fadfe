// The operator's decision on peer reports (api/peer_report.h): which members of a generation the others
// cannot reach, so that a partitioned worker is dropped instead of hanging every rebuild of its peers.
// Workers only report; this rule decides, and it must not let one worker with a broken link (which
// reports everyone else) or one false report remove a healthy member.
//
// Only reports about `membership`'s generation, from its members, about its members count; in a world of two,
// a NotReady member's report does not count against a Ready one. A member is a suspect when more than half of the other
// members report it unreachable. Every member that is not a
// suspect is kept; then the suspects are considered, Ready ones (in `ready`) before NotReady ones and in
// rank order among equals, and each is kept when no report (in either direction) lies between it and a
// member kept so far. So a worker cut off from the rest goes; in a world of two that report each other
// the Ready one stays, and the lower rank when both are Ready or both NotReady; in an even split the side
// holding the best member stays (a Ready one first, then the lowest rank).
//
// Why readiness first: the kubelet probes a worker over the pod network, so a worker cut off from its
// peers there is often NotReady as well, while its healthy peer stays Ready; in a world of two the
// reports alone cannot tell the two apart. Rank alone dropped the healthy rank 1 of a world of two whose
// rank 0 was the cut one, and rank 0 then failed every rebuild (8 generations in 22.6 s in a soak).
// Readiness only orders the suspects: it makes no member a suspect, and removes no one by itself.
//
// Thread-safety: a pure function.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "api/membership.h"
#include "api/peer_report.h"

namespace ringmaster::controller {

struct CutOffMember {
  std::string pod;
  std::vector<std::string> reporters;  // the members that reported it unreachable
};

// The members of `membership` to remove, in rank order. `ready`: the member pods whose Ready condition
// the operator observes True (raw, without any grace); every other member counts as NotReady.
std::vector<CutOffMember> CutOffMembers(const api::Membership& membership, const std::vector<api::PeerReport>& reports,
                                        const std::set<std::string>& ready);

}  // namespace ringmaster::controller
