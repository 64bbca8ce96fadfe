#include "api/membership.h"

#include <algorithm>

#include "api/json_fields.h"

namespace ringmaster::api {

using json = nlohmann::json;

std::string WorkerId(std::string_view pod, int32_t process) {
  std::string id(pod);
  if (process != 0) id += ":" + std::to_string(process);
  return id;
}

std::string Member::id() const { return WorkerId(pod, process); }

const Member* Membership::Find(const std::string& id) const {
  for (const auto& m : members)
    if (m.id() == id) return &m;
  return nullptr;
}

int32_t Membership::pod_count() const {
  std::vector<std::string_view> pods;
  for (const auto& m : members)
    if (std::find(pods.begin(), pods.end(), m.pod) == pods.end()) pods.push_back(m.pod);
  return static_cast<int32_t>(pods.size());
}

json MembershipToJson(const Membership& m) {
  json members = json::array();
  for (const auto& x : m.members) {
    members.push_back({{"pod", x.pod},
                       {"uid", x.uid},
                       {"rank", x.rank},
                       {"address", x.address},
                       {"node", x.node},
                       {"process", x.process}});
  }
  json j = {{"generation", m.generation},
            {"worldSize", m.world_size()},
            {"pods", m.pod_count()},
            {"coordinator", m.coordinator},
            {"members", members}};
  if (!m.reason.empty()) j["reason"] = m.reason;
  if (!m.message.empty()) j["message"] = m.message;
  if (!m.changed_at.empty()) j["changedAt"] = m.changed_at;
  return j;
}

namespace {

StatusOr<Member> MemberFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) return WrongType(path, "object", j);
  Member m;
  if (!j.contains("rank") || j["rank"].is_null()) return InvalidArgumentError(path + ".rank: required");
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "rank", &m.rank));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "pod", &m.pod));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "uid", &m.uid));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "address", &m.address));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "node", &m.node));
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "process", &m.process));
  if (m.process < 0) return InvalidArgumentError(path + ".process: must not be negative");
  if (m.pod.empty())
    return InvalidArgumentError(path + ".pod: required (the member with rank " + std::to_string(m.rank) + ")");
  return m;
}

Status ReadMembers(const json& j, const std::string& path, std::vector<Member>* out) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* members, ArrayField(j, path, "members"));
  if (members == nullptr) return Status::Ok();
  for (size_t i = 0; i < members->size(); ++i) {
    RINGMASTER_ASSIGN_OR_RETURN(Member m, MemberFromJson((*members)[i], path + ".members[" + std::to_string(i) + "]"));
    out->push_back(std::move(m));
  }
  std::sort(out->begin(), out->end(), [](const Member& a, const Member& b) { return a.rank < b.rank; });
  for (size_t i = 0; i < out->size(); ++i) {
    if ((*out)[i].rank != static_cast<int32_t>(i)) {
      return InvalidArgumentError(path + ".members: ranks must be 0.." + std::to_string(out->size() - 1) +
                                  " without gaps");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Membership> MembershipFromJson(const json& j, std::string_view path_view) {
  const std::string path(path_view);
  Membership m;
  if (j.is_null()) return m;
  if (!j.is_object()) return WrongType(path, "object", j);
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "generation", &m.generation));
  if (m.generation < 0) return InvalidArgumentError(path + ".generation: must not be negative");
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "coordinator", &m.coordinator));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "reason", &m.reason));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "message", &m.message));
  RINGMASTER_RETURN_IF_ERROR(ReadString(j, path, "changedAt", &m.changed_at));
  RINGMASTER_RETURN_IF_ERROR(ReadMembers(j, path, &m.members));
  std::optional<int64_t> world_size;
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "worldSize", &world_size));
  std::optional<int64_t> pods;
  RINGMASTER_RETURN_IF_ERROR(ReadInt(j, path, "pods", &pods));
  if (pods && *pods != m.pod_count()) {
    return InvalidArgumentError(path + ".pods: " + std::to_string(*pods) + " disagrees with the member list (" +
                                std::to_string(m.pod_count()) + " pods)");
  }
  if (world_size && *world_size != m.world_size()) {
    return InvalidArgumentError(path + ".worldSize: " + std::to_string(*world_size) +
                                " disagrees with the member list (" + std::to_string(m.world_size()) + ")");
  }
  return m;
}

StatusOr<Membership> ParseMembership(std::string_view text) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("not valid JSON (" + std::to_string(text.size()) + " bytes)");
  return MembershipFromJson(doc);
}

StatusOr<std::optional<Membership>> MembershipOfJob(const json& job) {
  if (!job.is_object()) return WrongType("trainingjob", "object", job);
  RINGMASTER_ASSIGN_OR_RETURN(const json* status, ObjectField(job, "", "status"));
  if (status == nullptr) return std::optional<Membership>();
  auto it = status->find("membership");
  if (it == status->end() || it->is_null()) return std::optional<Membership>();
  RINGMASTER_ASSIGN_OR_RETURN(Membership m, MembershipFromJson(*it, "status.membership"));
  return std::optional<Membership>(std::move(m));
}

Membership NextMembership(const Membership& current, const std::function<std::optional<Member>(const Member&)>& survive,
                          std::vector<Member> joiners,
                          const std::function<std::string(const Member&)>& coordinator_of) {
  Membership next;
  next.generation = current.generation + 1;
  for (const auto& m : current.members) {
    if (std::optional<Member> kept = survive(m)) next.members.push_back(std::move(*kept));
  }
  for (auto& j : joiners) next.members.push_back(std::move(j));
  for (size_t i = 0; i < next.members.size(); ++i) next.members[i].rank = static_cast<int32_t>(i);
  if (!next.members.empty()) next.coordinator = coordinator_of(next.members[0]);
  return next;
}

std::string HostOf(const Member& m) { return m.node + "/" + m.address; }

std::string CoordinatorAddress(const Member& rank0, int32_t port) {
  return rank0.address + ":" + std::to_string(ProcessPort(port, rank0.process));
}

}  // namespace ringmaster::api
