#include "kube/client.h"

#include "base/json_path.h"
#include "kube/api_error.h"

namespace ringmaster::kube {

namespace {

void AddQuery(std::string* path, const std::string& key, const std::string& value) {
  if (value.empty()) return;
  *path += (path->find('?') == std::string::npos ? "?" : "&");
  *path += key + "=" + UrlEncode(value);
}

std::string FieldValidationValue(FieldValidation v) {
  switch (v) {
    case FieldValidation::kServerDefault: return "";
    case FieldValidation::kIgnore: return "Ignore";
    case FieldValidation::kWarn: return "Warn";
    case FieldValidation::kStrict: return "Strict";
  }
  return "";
}

std::string WriteQuery(std::string path, const WriteOptions& o) {
  AddQuery(&path, "fieldManager", o.field_manager);
  if (o.dry_run) AddQuery(&path, "dryRun", "All");
  AddQuery(&path, "fieldValidation", FieldValidationValue(o.field_validation));
  return path;
}

}  // namespace

std::string NameOf(const json& obj) { return StringAt(obj, {"metadata", "name"}); }
std::string NamespaceOf(const json& obj) { return StringAt(obj, {"metadata", "namespace"}); }
std::string UidOf(const json& obj) { return StringAt(obj, {"metadata", "uid"}); }
std::string ResourceVersionOf(const json& obj) { return StringAt(obj, {"metadata", "resourceVersion"}); }
std::string KeyOf(const json& obj) { return ObjectKey(NamespaceOf(obj), NameOf(obj)); }

const json* FindCondition(const json& obj, std::string_view type) {
  for (const auto& c : ArrayAt(obj, {"status", "conditions"}))
    if (StringAt(c, {"type"}) == type) return &c;
  return nullptr;
}

std::string ConditionStatusOf(const json& obj, std::string_view type) {
  const json* c = FindCondition(obj, type);
  return c ? StringAt(*c, {"status"}) : "";
}

Client::Client(std::shared_ptr<RestClient> rest, std::string default_namespace)
    : rest_(std::move(rest)), default_namespace_(std::move(default_namespace)) {}

StatusOr<json> Client::Call(const std::string& method, const std::string& path, const json* body,
                            const std::string& content_type) {
  HttpRequest req;
  req.method = method;
  req.path = path;
  if (body != nullptr) {
    req.body = body->dump();
    req.content_type = content_type;
  }
  RINGMASTER_ASSIGN_OR_RETURN(HttpResponse resp, rest_->Do(req));
  if (resp.body.empty()) return json::object();
  json j = json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return DataLossError(method + " " + path + ": response body is not JSON");
  return j;
}

StatusOr<json> Client::Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                           const std::string& subresource) {
  return Call("GET", gvr.Path(ns, name, subresource), nullptr, "");
}

StatusOr<json> Client::List(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& o) {
  std::string path = gvr.Path(ns);
  AddQuery(&path, "labelSelector", o.label_selector);
  AddQuery(&path, "fieldSelector", o.field_selector);
  if (o.limit > 0) AddQuery(&path, "limit", std::to_string(o.limit));
  AddQuery(&path, "continue", o.continue_token);
  AddQuery(&path, "resourceVersion", o.resource_version);
  AddQuery(&path, "resourceVersionMatch", o.resource_version_match);
  return Call("GET", path, nullptr, "");
}

StatusOr<json> Client::ListAll(const GroupVersionResource& gvr, const std::string& ns, ListOptions options) {
  json all;
  while (true) {
    RINGMASTER_ASSIGN_OR_RETURN(json page, List(gvr, ns, options));
    if (all.is_null()) {
      all = std::move(page);
      if (!all.contains("items") || !all["items"].is_array()) all["items"] = json::array();
    } else if (page.contains("items") && page["items"].is_array()) {
      for (auto& item : page["items"]) all["items"].push_back(std::move(item));
      all["metadata"]["continue"] = StringAt(page, {"metadata", "continue"});
    }
    std::string next = StringAt(all, {"metadata", "continue"});
    if (next.empty()) break;
    options.continue_token = next;
    options.resource_version.clear();  // the continue token carries the snapshot
    options.resource_version_match.clear();
  }
  if (all.contains("metadata") && all["metadata"].is_object()) all["metadata"].erase("continue");
  return all;
}

StatusOr<json> Client::Create(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                              const WriteOptions& options) {
  return Call("POST", WriteQuery(gvr.Path(ns), options), &object, "application/json");
}

StatusOr<json> Client::Update(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                              const WriteOptions& options, const std::string& subresource) {
  std::string name = NameOf(object);
  if (name.empty()) return InvalidArgumentError("update of " + gvr.ToString() + ": object has no metadata.name");
  return Call("PUT", WriteQuery(gvr.Path(ns, name, subresource), options), &object, "application/json");
}

StatusOr<json> Client::Patch(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                             PatchType type, const json& patch, const PatchOptions& o) {
  std::string content_type;
  switch (type) {
    case PatchType::kMerge: content_type = "application/merge-patch+json"; break;
    case PatchType::kJson: content_type = "application/json-patch+json"; break;
    case PatchType::kStrategicMerge: content_type = "application/strategic-merge-patch+json"; break;
    case PatchType::kApply: content_type = "application/apply-patch+yaml"; break;  // JSON is valid YAML
  }
  if (type == PatchType::kApply && o.field_manager.empty())
    return InvalidArgumentError("server-side apply needs a field manager");
  std::string path = gvr.Path(ns, name, o.subresource);
  AddQuery(&path, "fieldManager", o.field_manager);
  if (o.force) AddQuery(&path, "force", "true");
  return Call("PATCH", path, &patch, content_type);
}

StatusOr<json> Client::Apply(const GroupVersionResource& gvr, const std::string& ns, const json& object,
                             const std::string& field_manager, bool force) {
  PatchOptions o;
  o.field_manager = field_manager;
  o.force = force;
  return Patch(gvr, ns, NameOf(object), PatchType::kApply, object, o);
}

Status Client::Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                      const DeleteOptions& o) {
  json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!o.propagation_policy.empty()) body["propagationPolicy"] = o.propagation_policy;
  if (o.precondition_uid) body["preconditions"]["uid"] = *o.precondition_uid;
  if (o.precondition_resource_version) body["preconditions"]["resourceVersion"] = *o.precondition_resource_version;
  if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
  auto r = Call("DELETE", gvr.Path(ns, name), &body, "application/json");
  return r.ok() ? Status::Ok() : r.status();
}

StatusOr<json> Client::GetScale(const GroupVersionResource& gvr, const std::string& ns, const std::string& name) {
  return Get(gvr, ns, name, "scale");
}

StatusOr<json> Client::UpdateScale(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                   int32_t replicas) {
  PatchOptions o;
  o.subresource = "scale";
  return Patch(gvr, ns, name, PatchType::kMerge, json{{"spec", {{"replicas", replicas}}}}, o);
}

StatusOr<std::string> Client::CreateToken(const std::string& ns, const std::string& sa, const TokenRequestOptions& o) {
  json body = {{"apiVersion", "authentication.k8s.io/v1"},
               {"kind", "TokenRequest"},
               {"spec", {{"audiences", o.audiences}, {"expirationSeconds", o.expiration_seconds}}}};
  if (!o.bound_kind.empty()) {
    body["spec"]["boundObjectRef"] = {
        {"apiVersion", "v1"}, {"kind", o.bound_kind}, {"name", o.bound_name}, {"uid", o.bound_uid}};
  }
  RINGMASTER_ASSIGN_OR_RETURN(
      json resp, Call("POST", resources::ServiceAccounts().Path(ns, sa, "token"), &body, "application/json"));
  std::string token = StringAt(resp, {"status", "token"});
  if (token.empty()) return DataLossError("TokenRequest answer has no status.token");
  return token;
}

StatusOr<std::unique_ptr<WatchStream>> Client::Watch(const GroupVersionResource& gvr, const std::string& ns,
                                                     const WatchOptions& o) {
  std::string path = gvr.Path(ns);
  AddQuery(&path, "watch", "1");
  AddQuery(&path, "labelSelector", o.label_selector);
  AddQuery(&path, "fieldSelector", o.field_selector);
  AddQuery(&path, "resourceVersion", o.resource_version);
  if (o.allow_bookmarks) AddQuery(&path, "allowWatchBookmarks", "true");
  if (o.timeout_seconds > 0) AddQuery(&path, "timeoutSeconds", std::to_string(o.timeout_seconds));
  HttpRequest req;
  req.path = path;
  req.timeout =
      o.client_idle_timeout.count() > 0
          ? o.client_idle_timeout
          : std::chrono::milliseconds(std::chrono::seconds(o.timeout_seconds > 0 ? o.timeout_seconds + 30 : 3600));
  RINGMASTER_ASSIGN_OR_RETURN(StreamedResponse resp, rest_->Stream(req));
  return std::make_unique<WatchStream>(std::move(resp.body));
}

StatusOr<std::shared_ptr<Client>> NewClient(const ClientConfig& config, std::shared_ptr<ClientMetrics> metrics,
                                            LogSink log) {
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> rest,
                              NewRestClient(config, std::move(metrics), std::move(log)));
  return std::make_shared<Client>(std::move(rest), config.namespace_name);
}

}  // namespace ringmaster::kube
