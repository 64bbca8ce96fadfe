// Addressing of API resources by group/version/resource, and the paths the apiserver serves them at.
// Pure values; thread-safe.
#pragma once

#include <string>

namespace ringmaster::kube {

struct GroupVersionResource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "pods"
  bool namespaced = true;

  // "/api/v1" or "/apis/<group>/<version>".
  std::string GroupVersionPath() const;
  // The collection path (namespace "" = all namespaces, or a cluster-scoped resource), plus
  // "/<name>" and "/<subresource>" when given. Path segments are percent-encoded.
  std::string Path(const std::string& ns, const std::string& name = "", const std::string& subresource = "") const;
  // "pods" or "trainingjobs.ringmaster.io", for metrics and messages.
  std::string ToString() const { return group.empty() ? resource : resource + "." + group; }
};

// Well-known resources.
namespace resources {
GroupVersionResource Pods();
GroupVersionResource ConfigMaps();
GroupVersionResource Secrets();
GroupVersionResource Services();
GroupVersionResource ServiceAccounts();
GroupVersionResource Events();
GroupVersionResource Namespaces();
GroupVersionResource Nodes();
GroupVersionResource Leases();
GroupVersionResource Deployments();
GroupVersionResource Roles();
GroupVersionResource RoleBindings();
GroupVersionResource NetworkPolicies();
GroupVersionResource CustomResourceDefinitions();
}  // namespace resources

// Percent-encodes a query value or path segment (RFC 3986 unreserved characters stay).
std::string UrlEncode(const std::string& s);

// "ns/name", or "name" for cluster-scoped objects: the key of a reconcile request and the cache.
std::string ObjectKey(const std::string& ns, const std::string& name);

}  // namespace ringmaster::kube
