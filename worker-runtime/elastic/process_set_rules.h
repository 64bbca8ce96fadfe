// Process sets that outlive a membership change. A communicator's process sets
// are built from its world, so after a rebuild the driver re-splits every set
// from the new world communicator (DESIGN.md, "Membership protocol", step 5).
// The program does not name sets by rank -- ranks move when workers leave --
// but by a rule over the membership record: by stable worker ids (the members
// still present, in rank order), or by placement (one set per node and one of
// node leaders, for hierarchical reductions as Horovod's local/cross
// communicators). A rule yields zero or more named sets for a record; a set with
// no member in a generation does not exist in it.
//
//   options.process_sets = {SetOfWorkers("pair", {"w0", "w3"}), SetsPerNode()};
//   ... in a step: int id = ctx.ProcessSet("node:" + my_node).value();
//
// Thread-safety: rules are pure functions of the record; call from any thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/membership/membership_source.h"

namespace ringmaster::elastic {

struct NamedProcessSet {
  std::string name;
  std::vector<int> ranks;  // world ranks of this generation, ascending
};

// Every rank evaluates the rules on the same record, so every rank creates the
// same sets in the same order (the split is collective over the world).
using ProcessSetRule = std::function<std::vector<NamedProcessSet>(const api::Membership&)>;

// The set `name` of these worker ids (pods); absent ones are left out.
ProcessSetRule SetOfWorkers(std::string name, std::vector<std::string> worker_ids);

// The set `name` of these world ranks, as far as the generation has them (ranks
// move when workers leave: for the static sets of RINGMASTER_PROCESS_SETS).
ProcessSetRule SetOfRanks(std::string name, std::vector<int> ranks);

// One set "node:<node>" per node with the ranks on it, and "node-leaders" with
// the lowest rank of each node (Horovod's local and cross communicators).
ProcessSetRule SetsPerNode();

// The local rank of worker `id` (api::Member::id) in `record`: its index, in rank order, among the members
// on its host (api::HostOf: same node and address -- in a cluster its pod, whose processes are consecutive
// ranks, so process i has local rank i; under ringmaster-run the node, "localhost" unless
// --workers-per-node simulates several). Horovod's local rank, and torchrun's LOCAL_RANK. Under NCCL it
// picks the worker's GPU when nothing pinned one (RuntimeConfig::local_rank). 0 when `id` is not a member.
int LocalRank(const api::Membership& record, const std::string& id);
// The number of members on worker `id`'s host (Horovod's local size); 0 when `id` is not a member.
int LocalSize(const api::Membership& record, const std::string& id);

// Evaluates every rule on `record`. Errors: InvalidArgument when two sets share
// a name (the message names it). Sets without members are dropped.
StatusOr<std::vector<NamedProcessSet>> EvaluateProcessSetRules(const std::vector<ProcessSetRule>& rules,
                                                               const api::Membership& record);

}  // namespace ringmaster::elastic
