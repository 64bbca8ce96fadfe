// The membership record: the one type both sides agree on (DESIGN.md, "Membership protocol"). The operator
// publishes it as a TrainingJob's status.membership; the local launcher (ringmaster-run) writes the same
// document to a file; a worker reads either through a membership source.
//
// The rule that derives a new record (NextMembership) lives here too, so the operator and the launcher
// cannot drift: survivors keep their relative order (rank 0 stays rank 0 unless it is lost), newcomers are
// appended, ranks are 0..n-1 and every change makes generation + 1.
//
// Errors: MembershipFromJson returns InvalidArgument naming the field ("membership.members[1].rank: ...").
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::api {

struct Member {
  std::string pod;      // the worker's stable id (pod name, or the launcher's worker name)
  std::string uid;      // changes when a worker of the same name is replaced
  int32_t rank = 0;
  std::string address;  // the host the worker listens on: its pod IP (the launcher: 127.0.0.1); no port
  std::string node;

  bool operator==(const Member&) const = default;
};

struct Membership {
  int64_t generation = 0;       // 0: nothing published yet; every change is strictly larger
  std::string coordinator;      // host:port of the rendezvous store, served by rank 0
  std::vector<Member> members;  // sorted by rank, ranks 0..size-1
  std::string reason;           // why it changed (e.g. WorkerFailed); also the operator's Event reason
  std::string message;          // a sentence saying what changed
  std::string changed_at;       // RFC 3339

  int32_t world_size() const { return static_cast<int32_t>(members.size()); }
  // The member with this id (pod), or nullptr.
  const Member* Find(const std::string& pod) const;
  bool operator==(const Membership&) const = default;
};

// The JSON document (status.membership, or the launcher's file): {generation, worldSize, coordinator,
// members: [{pod, uid, rank, address, node}], reason?, message?, changedAt?}.
nlohmann::json MembershipToJson(const Membership& m);
// null decodes to the empty record. InvalidArgument, naming the field under `path`, for: a field of the
// wrong type, a negative generation, a member without pod or without an integer rank, ranks that are not
// 0..n-1, or a worldSize that disagrees with the member list.
StatusOr<Membership> MembershipFromJson(const nlohmann::json& j, std::string_view path = "membership");
// The record in a JSON text (the launcher's membership file). InvalidArgument when the text is not JSON
// ("not valid JSON (N bytes)"), otherwise as MembershipFromJson. Never throws, whatever the bytes.
StatusOr<Membership> ParseMembership(std::string_view text);
// A TrainingJob object's status.membership (what a worker's Kubernetes source watches): nullopt while the
// job has none; InvalidArgument when the job or its status is not an object, or as MembershipFromJson.
StatusOr<std::optional<Membership>> MembershipOfJob(const nlohmann::json& job);

// The membership rule. `survive` is asked about each current member in rank order and returns it
// (possibly with a new address/node) when it stays, nullopt when it leaves; `joiners` are appended in
// their order. The result has generation current.generation + 1, ranks 0..n-1 and the coordinator
// `coordinator_of(rank 0)` (empty without members); reason/message/changed_at are left to the caller.
Membership NextMembership(const Membership& current, const std::function<std::optional<Member>(const Member&)>& survive,
                          std::vector<Member> joiners, const std::function<std::string(const Member&)>& coordinator_of);

// "<address>:<port>": the coordinator when rank 0 serves the store on `port`.
std::string CoordinatorAddress(const Member& rank0, int32_t port);

}  // namespace ringmaster::api
