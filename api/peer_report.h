// Peer reports: how a worker tells the operator which members of its generation it cannot reach
// (DESIGN.md, "Membership protocol" 3: workers report, the operator decides). After a collective or a
// rendezvous times out, a worker probes every other member's store port; the members whose connection
// attempt went unanswered (packets vanish: a partition, not a crash, which resets) are reported. The
// reports of a job live in one ConfigMap, PeerReportsName(job), that the operator creates with the job's
// other objects; each worker's per-job Role may get and patch that one object. Its data maps the
// reporter's pod name to an encoded PeerReport, so a worker only ever replaces its own entry (a JSON
// merge patch of one key), and a newer report from the same worker supersedes its older one.
//
// Errors: DecodePeerReport returns InvalidArgument naming the reporter and the field. Never throws.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ringmaster::api {

// The ConfigMap holding job `job`'s peer reports.
std::string PeerReportsName(std::string_view job);

struct PeerReport {
  std::string reporter;                  // the reporting worker's pod (the ConfigMap key)
  int64_t generation = 0;                // the membership generation the report is about
  std::vector<std::string> unreachable;  // member pods it could not reach; empty: it reaches everyone
  std::string reported_at;               // RFC 3339, for people

  bool operator==(const PeerReport&) const = default;
};

// The ConfigMap value: {"generation":G,"unreachable":[...],"reportedAt":"..."}.
std::string EncodePeerReport(const PeerReport& report);
// The report of `reporter` from its ConfigMap value.
StatusOr<PeerReport> DecodePeerReport(const std::string& reporter, std::string_view value);

}  // namespace ringmaster::api
