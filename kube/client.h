// Client: a generic Kubernetes client addressed by GroupVersionResource (core, apps, coordination,
// CRDs alike), in the shape of client-go's dynamic client. Objects are nlohmann::json.
//
// Errors: every method returns the apiserver's failure as a Status with the HTTP code and reason
// (api_error.h): kNotFound, kAlreadyExists, kConflict (stale resourceVersion), kPermissionDenied,
// kInvalidArgument, kGone, kResourceExhausted, kUnavailable (no answer / 5xx). kDataLoss when a 2xx
// body is not JSON. Retries and rate limits are applied underneath, by RestClient.
// Thread-safety: thread-safe. Ownership: shares its RestClient.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "kube/watch.h"

namespace ringmaster::kube {

using nlohmann::json;

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;             // page size; 0: no paging
  std::string continue_token;    // from the previous page's metadata.continue
  std::string resource_version;  // "" : most recent (quorum read); "0": any (cache)
  std::string resource_version_match;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // start after this version ("" = now, with no initial events)
  bool allow_bookmarks = true;
  int timeout_seconds = 300;  // the server ends the watch after this
  // The client gives up (kUnavailable) when no byte arrives for this long. 0: timeout_seconds + 30 s.
  std::chrono::milliseconds client_idle_timeout{0};
};

// How the apiserver treats a field it does not know (or a duplicated one) in an object written by Create or
// Update: the fieldValidation query parameter. kServerDefault sends none, and the server warns (a Warning header)
// and drops the field; kStrict has it refuse the object instead, kInvalidArgument naming the field
// (`strict decoding error: unknown field "spec.tolerationz"`), as kubectl does by default.
enum class FieldValidation { kServerDefault, kIgnore, kWarn, kStrict };

struct WriteOptions {
  std::string field_manager;
  bool dry_run = false;
  FieldValidation field_validation = FieldValidation::kServerDefault;

  // The options of a write refused when it holds a field the apiserver does not know (fieldValidation=Strict).
  static WriteOptions Strict() {
    WriteOptions o;
    o.field_validation = FieldValidation::kStrict;
    return o;
  }
};

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply };

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply: take ownership of conflicting fields
  std::string subresource;    // "status", "scale" or ""
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
};

struct TokenRequestOptions {
  std::vector<std::string> audiences;
  int64_t expiration_seconds = 3600;
  // Binds the token to an object (kind "Pod" or "Secret", its name and uid), as the kubelet's projected
  // tokens are bound to their pod: the apiserver refuses the token once that object is gone.
  // Empty kind: not bound.
  std::string bound_kind, bound_name, bound_uid;
};

class Client {
 public:
  Client(std::shared_ptr<RestClient> rest, std::string default_namespace);

  StatusOr<json> Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                     const std::string& subresource = "");
  // One page; the list's metadata.continue (if any) gives the next.
  StatusOr<json> List(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& options = {});
  // All pages (options.limit is the page size), as one list whose metadata.resourceVersion is the
  // snapshot's. kGone when the continue token expired mid-way (relist).
  StatusOr<json> ListAll(const GroupVersionResource& gvr, const std::string& ns, ListOptions options = {});
  StatusOr<json> Create(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                        const WriteOptions& options = {});
  // PUT of `object` (its metadata.name and, for optimistic concurrency, metadata.resourceVersion).
  StatusOr<json> Update(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                        const WriteOptions& options = {}, const std::string& subresource = "");
  StatusOr<json> UpdateStatus(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                              const WriteOptions& options = {}) {
    return Update(gvr, ns, object, options, "status");
  }
  StatusOr<json> Patch(const GroupVersionResource& gvr, const std::string& ns, const std::string& name, PatchType type,
                       const json& patch, const PatchOptions& options = {});
  // Server-side apply: Patch(kApply) of a full intent object.
  StatusOr<json> Apply(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                       const std::string& field_manager, bool force = false);
  Status Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {});
  // The scale subresource (autoscaling/v1 Scale).
  StatusOr<json> GetScale(const GroupVersionResource& gvr, const std::string& ns, const std::string& name);
  StatusOr<json> UpdateScale(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                             int32_t replicas);
  // TokenRequest for a service account; returns the token.
  StatusOr<std::string> CreateToken(const std::string& ns, const std::string& service_account,
                                    const TokenRequestOptions& options = {});
  // Opens a watch. The caller owns the stream; it may be stopped from another thread.
  StatusOr<std::unique_ptr<WatchStream>> Watch(const GroupVersionResource& gvr, const std::string& ns,
                                               const WatchOptions& options);

  const std::string& default_namespace() const { return default_namespace_; }
  RestClient& rest() { return *rest_; }

 private:
  StatusOr<json> Call(const std::string& method, const std::string& path, const json* body,
                      const std::string& content_type);

  const std::shared_ptr<RestClient> rest_;
  const std::string default_namespace_;
};

// Builds a Client from a loaded configuration.
StatusOr<std::shared_ptr<Client>> NewClient(const ClientConfig& config,
                                            std::shared_ptr<ClientMetrics> metrics = nullptr,
                                            LogSink log = StderrLogSink("ringmaster-kube"));

// Accessors for common metadata fields ("" when absent).
std::string NameOf(const json& obj);
std::string NamespaceOf(const json& obj);
std::string UidOf(const json& obj);
std::string ResourceVersionOf(const json& obj);
// ObjectKey(namespace, name) of an object.
std::string KeyOf(const json& obj);
// The entry of status.conditions whose type is `type` (a pod's, a node's, a Workload's); null when absent.
const json* FindCondition(const json& obj, std::string_view type);
// That condition's status ("True", "False", "Unknown"); "" when absent.
std::string ConditionStatusOf(const json& obj, std::string_view type);

}  // namespace ringmaster::kube
