// Which members of a generation this worker cannot reach, asked after a collective or a rendezvous
// failed without a newer membership (the evidence a worker reports, api/peer_report.h; the operator
// decides). One TCP connection attempt to each other member's store port (every worker serves one from
// its start), all at once, for at most `timeout`. A member that accepts, or refuses (a reset: its host
// answers, though its process may be gone), is reachable. One whose attempt goes unanswered, or whose
// address has no route, is not: its packets vanish, as in a network partition; a crashed or stopped
// (SIGSTOP) worker's kernel still answers.
//
// A member whose address is not a numeric IPv4/IPv6 address is never reported (no name lookups here).
// Thread-safety: a pure function of the network; blocks for at most `timeout`.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "api/membership.h"

namespace ringmaster::elastic {

// The pods of `record`'s members other than worker `self` (an id; its own pod is never probed) that did not
// answer on `port`, in rank order, each once.
std::vector<std::string> UnreachablePeers(const api::Membership& record, const std::string& self, uint16_t port,
                                          std::chrono::milliseconds timeout);

}  // namespace ringmaster::elastic
