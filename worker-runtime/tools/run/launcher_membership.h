// The membership record ringmaster-run publishes: built from its process table in one place (the
// record's type and this mapping are the contract the workers read; see launcher.h for the rule).
#pragma once

#include <cstdint>
#include <string>

#include "membership/file_source.h"
#include "tools/run/worker_table.h"

namespace ringmaster::elastic {

// Generation `generation` of the members of `table`, in their rank order: each member's id, its pid as
// the uid, its rank, its store address 127.0.0.1:PORT and its node; the coordinator is rank 0's address.
// Pure function of its arguments.
membership::MembershipRecord BuildMembershipRecord(int64_t generation, const std::string& reason,
                                                   const WorkerTable& table);

}  // namespace ringmaster::elastic
