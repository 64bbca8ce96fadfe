// Which user a container runs as, by the kubelet's and the runtime's rules: securityContext.runAsUser /
// runAsGroup of the container over those of the pod over the image's User ("uid", "uid:gid", "name",
// "name:group"; names looked up in the image's /etc/passwd and /etc/group); without a group, the user's
// primary group from /etc/passwd (0 when it has no entry). Supplementary groups: the pod's
// supplementalGroups and fsGroup. runAsNonRoot refuses uid 0 with the kubelet's own message.
// Pure functions; thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::testing {

struct ContainerUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary, the primary first
  std::string home = "/";     // from /etc/passwd, "/" without an entry (HOME unless the env sets it)
};

// `passwd` and `group` are the image's files ("" when it has none). InvalidArgument (a pod that can never
// start) for runAsNonRoot with uid 0 ("container has runAsNonRoot and image will run as root (pod: "ns/name",
// container: c)"), runAsNonRoot with a non-numeric image user and no runAsUser, a user or group name the
// image does not know, or a malformed User.
StatusOr<ContainerUser> ResolveContainerUser(const nlohmann::json& pod, const nlohmann::json& container,
                                             const std::string& image_user, const std::string& passwd,
                                             const std::string& group);

}  // namespace ringmaster::testing
