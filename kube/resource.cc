#include "kube/resource.h"

namespace ringmaster::kube {

std::string GroupVersionResource::GroupVersionPath() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string GroupVersionResource::Path(const std::string& ns, const std::string& name,
                                       const std::string& subresource) const {
  std::string p = GroupVersionPath();
  if (namespaced && !ns.empty()) p += "/namespaces/" + UrlEncode(ns);
  p += "/" + resource;
  if (!name.empty()) p += "/" + UrlEncode(name);
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

namespace resources {
GroupVersionResource Pods() { return {"", "v1", "pods", true}; }
GroupVersionResource ConfigMaps() { return {"", "v1", "configmaps", true}; }
GroupVersionResource Secrets() { return {"", "v1", "secrets", true}; }
GroupVersionResource Services() { return {"", "v1", "services", true}; }
GroupVersionResource ServiceAccounts() { return {"", "v1", "serviceaccounts", true}; }
GroupVersionResource Events() { return {"", "v1", "events", true}; }
GroupVersionResource Namespaces() { return {"", "v1", "namespaces", false}; }
GroupVersionResource Nodes() { return {"", "v1", "nodes", false}; }
GroupVersionResource Leases() { return {"coordination.k8s.io", "v1", "leases", true}; }
GroupVersionResource Deployments() { return {"apps", "v1", "deployments", true}; }
GroupVersionResource Roles() { return {"rbac.authorization.k8s.io", "v1", "roles", true}; }
GroupVersionResource RoleBindings() { return {"rbac.authorization.k8s.io", "v1", "rolebindings", true}; }
GroupVersionResource NetworkPolicies() { return {"networking.k8s.io", "v1", "networkpolicies", true}; }
GroupVersionResource CustomResourceDefinitions() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}
}  // namespace resources

std::string UrlEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ObjectKey(const std::string& ns, const std::string& name) { return ns.empty() ? name : ns + "/" + name; }

}  // namespace ringmaster::kube
