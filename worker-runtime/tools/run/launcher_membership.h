// The membership record ringmaster-run publishes: built from its process table in one place (the
// record's type and this mapping are the contract the workers read; see launcher.h for the rule).
#pragma once

#include <cstdint>
#include <string>

#include "api/membership.h"
#include "worker-runtime/tools/run/worker_table.h"

namespace ringmaster::run {

// The record after `published` for the members of `table` (api::NextMembership: survivors keep their
// order, the workers the table added since are appended, generation + 1). Each member is its id, its pid
// as the uid, its rank, the host it listens on (127.0.0.1) and its node; the coordinator is rank 0's
// store port on its host. Pure function of its arguments.
api::Membership BuildMembershipRecord(const api::Membership& published, const std::string& reason,
                                      const WorkerTable& table);

}  // namespace ringmaster::run
