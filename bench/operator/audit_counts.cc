#include "bench/operator/audit_counts.h"

#include <sys/stat.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

namespace ringmaster::bench {

int64_t AuditLogSize(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

StatusOr<AgentRequests> CountAgentRequests(const std::string& path, int64_t from, int64_t to,
                                           const std::string& agent_prefix) {
  if (to < from) return FailedPreconditionError("the audit log " + path + " was rotated during the phase");
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read the audit log " + path + " (was the cluster started with --audit-log?)");
  in.seekg(from);
  AgentRequests out;
  std::set<std::string> seen;
  std::string line;
  int64_t at = from;
  while (at < to && std::getline(in, line)) {
    at += static_cast<int64_t>(line.size()) + 1;
    if (line.find(agent_prefix) == std::string::npos) continue;  // cheap filter before parsing
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("userAgent", "").rfind(agent_prefix, 0) != 0) continue;
    if (!seen.insert(e.value("auditID", "")).second) continue;
    const auto& ref = e.value("objectRef", nlohmann::json::object());
    std::string resource = ref.value("resource", e.value("requestURI", ""));
    if (ref.contains("subresource")) resource += "/" + ref.value("subresource", "");
    out.total++;
    out.by_verb_resource[e.value("verb", "") + " " + resource]++;
  }
  return out;
}

}  // namespace ringmaster::bench
