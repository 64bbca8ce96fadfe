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
  std::string pod;  // the worker's pod (or the launcher's worker name)
  std::string uid;  // changes when a worker of the same name is replaced
  int32_t rank = 0;
  std::string address;  // the host the worker listens on: its pod IP (the launcher: 127.0.0.1); no port
  std::string node;
  // Which of its pod's processes this rank is (spec.processesPerPod): 0..k-1, consecutive ranks in a pod.
  // A pod is the unit of failure: all its processes join and leave together.
  int32_t process = 0;

  // The worker's stable id: the pod for process 0, "<pod>:<process>" for the others (WorkerId).
  std::string id() const;
  bool operator==(const Member&) const = default;
};

// The id of process `process` of pod `pod`: the pod itself for process 0 (so a one-process pod's worker is
// its pod), "<pod>:<process>" otherwise (':' cannot appear in a pod name).
std::string WorkerId(std::string_view pod, int32_t process);

// The port process `process` of a pod listens on for a service whose process-0 port is `base` (every
// process of a pod shares the pod's IP, so each takes the next port).
inline int32_t ProcessPort(int32_t base, int32_t process) { return base + process; }

struct Membership {
  int64_t generation = 0;       // 0: nothing published yet; every change is strictly larger
  std::string coordinator;      // host:port of the rendezvous store, served by rank 0
  std::vector<Member> members;  // sorted by rank, ranks 0..size-1
  std::string reason;           // why it changed (e.g. WorkerFailed); also the operator's Event reason
  std::string message;          // a sentence saying what changed
  std::string changed_at;       // RFC 3339

  int32_t world_size() const { return static_cast<int32_t>(members.size()); }
  // The member with this worker id (Member::id(): the pod for a one-process pod), or nullptr.
  const Member* Find(const std::string& id) const;
  // The number of distinct pods among the members.
  int32_t pod_count() const;
  bool operator==(const Membership&) const = default;
};

// The JSON document (status.membership, or the launcher's file): {generation, worldSize, pods (both
// derived from the members), coordinator,
// members: [{pod, uid, rank, address, node, process}], reason?, message?, changedAt?}. A member without
// `process` is process 0.
nlohmann::json MembershipToJson(const Membership& m);
// null decodes to the empty record. InvalidArgument, naming the field under `path`, for: a field of the
// wrong type, a negative generation, a member without pod or without an integer rank, ranks that are not
// 0..n-1, or a worldSize or pods count that disagrees with the member list.
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

// The host a member runs on, as Horovod's local ranks count them: the processes that share an address and a
// node. In a cluster that is a pod (its own IP, its own GPUs); under ringmaster-run, the machine.
std::string HostOf(const Member& m);

// "<address>:<port + rank0.process>": the coordinator when rank 0 serves the store on `port`.
std::string CoordinatorAddress(const Member& rank0, int32_t port);

}  // namespace ringmaster::api
