// AuditCounts: the apiserver's own count of one client's requests, read from its audit log
// (cluster.sh up --audit-log): requests whose user agent starts with a prefix, by verb and resource,
// between two offsets of the log (one phase of a bench). Each request counts once (its stages share
// an auditID). Test support only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"

namespace ringmaster::bench {

struct AgentRequests {
  int64_t total = 0;
  std::map<std::string, int64_t> by_verb_resource;  // "create pods", "update trainingjobs/status", ...
};

// The log's size now (an offset to count from); 0 when it does not exist yet.
int64_t AuditLogSize(const std::string& path);

// Counts the requests in bytes [from, to) of the audit log at `path` whose userAgent starts with
// `agent_prefix`. Errors: NotFound when the file cannot be read; FailedPrecondition when `to` < `from`
// (the log was rotated meanwhile).
StatusOr<AgentRequests> CountAgentRequests(const std::string& path, int64_t from, int64_t to,
                                           const std::string& agent_prefix);

}  // namespace ringmaster::bench
