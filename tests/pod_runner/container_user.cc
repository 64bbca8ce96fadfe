#include "tests/pod_runner/container_user.h"

#include <charconv>
#include <optional>
#include <sstream>

#include "base/json_path.h"

namespace ringmaster::testing {

using json = nlohmann::json;

namespace {

std::optional<uint32_t> Numeric(const std::string& s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The fields of the /etc/passwd or /etc/group line whose field `key_field` equals `key`.
std::optional<std::vector<std::string>> FindEntry(const std::string& file, size_t key_field, const std::string& key) {
  std::istringstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    size_t at = 0;
    while (true) {
      size_t colon = line.find(':', at);
      fields.push_back(line.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
    if (fields.size() > key_field && fields[key_field] == key) return fields;
  }
  return std::nullopt;
}

std::optional<int64_t> SecurityInt(const json& pod, const json& container, const char* key) {
  for (const json* sc : {&At(container, {"securityContext"}), &At(pod, {"spec", "securityContext"})}) {
    const json& v = At(*sc, {key});
    if (v.is_number_integer()) return v.get<int64_t>();
  }
  return std::nullopt;
}

bool RunAsNonRoot(const json& pod, const json& container) {
  for (const json* sc : {&At(container, {"securityContext"}), &At(pod, {"spec", "securityContext"})}) {
    const json& v = At(*sc, {"runAsNonRoot"});
    if (v.is_boolean()) return v.get<bool>();
  }
  return false;
}

}  // namespace

StatusOr<ContainerUser> ResolveContainerUser(const json& pod, const json& container, const std::string& image_user,
                                             const std::string& passwd, const std::string& group) {
  const std::string where = "(pod: \"" + StringAt(pod, {"metadata", "namespace"}) + "/" +
                            StringAt(pod, {"metadata", "name"}) + "\", container: " + StringAt(container, {"name"}) +
                            ")";
  const std::optional<int64_t> run_as_user = SecurityInt(pod, container, "runAsUser");
  const std::optional<int64_t> run_as_group = SecurityInt(pod, container, "runAsGroup");
  std::string user_part = image_user, group_part;
  if (size_t colon = image_user.find(':'); colon != std::string::npos) {
    user_part = image_user.substr(0, colon);
    group_part = image_user.substr(colon + 1);
    if (user_part.empty() || group_part.empty())
      return InvalidArgumentError("image user '" + image_user + "' is malformed");
  }
  if (RunAsNonRoot(pod, container) && !run_as_user && !user_part.empty() && !Numeric(user_part)) {
    return InvalidArgumentError("container has runAsNonRoot and image has non-numeric user (" + user_part +
                                "), cannot verify user is non-root " + where);
  }

  ContainerUser u;
  std::optional<gid_t> primary;  // from the user's passwd entry
  if (run_as_user) {
    u.uid = static_cast<uid_t>(*run_as_user);
  } else if (!user_part.empty()) {
    if (std::optional<uint32_t> n = Numeric(user_part)) {
      u.uid = *n;
    } else {
      auto entry = FindEntry(passwd, 0, user_part);
      if (!entry || entry->size() < 3 || !Numeric((*entry)[2])) {
        return InvalidArgumentError("unable to find user " + user_part +
                                    ": no matching entries in the image's passwd file " + where);
      }
      u.uid = *Numeric((*entry)[2]);
    }
  }
  if (auto entry = FindEntry(passwd, 2, std::to_string(u.uid))) {
    if (entry->size() > 3) {
      if (auto g = Numeric((*entry)[3])) primary = *g;
    }
    if (entry->size() > 5 && !(*entry)[5].empty()) u.home = (*entry)[5];
  }
  if (RunAsNonRoot(pod, container) && u.uid == 0) {
    return InvalidArgumentError("container has runAsNonRoot and image will run as root " + where);
  }

  if (run_as_group) {
    u.gid = static_cast<gid_t>(*run_as_group);
  } else if (!group_part.empty()) {
    if (std::optional<uint32_t> n = Numeric(group_part)) {
      u.gid = *n;
    } else {
      auto entry = FindEntry(group, 0, group_part);
      if (!entry || entry->size() < 3 || !Numeric((*entry)[2])) {
        return InvalidArgumentError("unable to find group " + group_part +
                                    ": no matching entries in the image's group file " + where);
      }
      u.gid = *Numeric((*entry)[2]);
    }
  } else {
    u.gid = primary.value_or(0);
  }

  u.groups.push_back(u.gid);
  auto add = [&u](int64_t g) {
    for (gid_t have : u.groups)
      if (have == static_cast<gid_t>(g)) return;
    u.groups.push_back(static_cast<gid_t>(g));
  };
  const json& sc = At(pod, {"spec", "securityContext"});
  if (const json& extra = At(sc, {"supplementalGroups"}); extra.is_array()) {
    for (const auto& g : extra)
      if (g.is_number_integer()) add(g.get<int64_t>());
  }
  if (const json& fs = At(sc, {"fsGroup"}); fs.is_number_integer()) add(fs.get<int64_t>());
  return u;
}

}  // namespace ringmaster::testing
