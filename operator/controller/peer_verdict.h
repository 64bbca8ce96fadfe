// The operator's decision on peer reports (api/peer_report.h): which members of a generation the others
// cannot reach, so that a partitioned worker is dropped instead of hanging every rebuild of its peers.
// Workers only report; this rule decides, and it must not let one worker with a broken link (which
// reports everyone else) or one false report remove a healthy member.
//
// Only reports about `membership`'s generation, from its members, about its members count. A member is a
// suspect when more than half of the other members report it unreachable. Every member that is not a
// suspect is kept; then the suspects, in rank order, are kept when no report (in either direction) lies
// between them and a member kept so far. So a worker cut off from the rest goes; in a world of two that
// report each other the lower rank stays; in an even split the side holding the lowest rank stays.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "api/membership.h"
#include "api/peer_report.h"

namespace ringmaster::controller {

struct CutOffMember {
  std::string pod;
  std::vector<std::string> reporters;  // the members that reported it unreachable
};

// The members of `membership` to remove, in rank order.
std::vector<CutOffMember> CutOffMembers(const api::Membership& membership, const std::vector<api::PeerReport>& reports);

}  // namespace ringmaster::controller
