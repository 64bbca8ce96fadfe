#include "kube/store.h"

namespace ringmaster::kube {

using nlohmann::json;

IndexFunc IndexByNamespace() {
  return [](const json& obj) -> std::vector<std::string> {
    auto m = obj.find("metadata");
    if (m == obj.end() || !m->is_object()) return {};
    auto ns = m->find("namespace");
    if (ns == m->end() || !ns->is_string()) return {};
    return {ns->get<std::string>()};
  };
}

IndexFunc IndexByOwnerUid() {
  return [](const json& obj) -> std::vector<std::string> {
    std::vector<std::string> out;
    auto m = obj.find("metadata");
    if (m == obj.end() || !m->is_object()) return out;
    auto refs = m->find("ownerReferences");
    if (refs == m->end() || !refs->is_array()) return out;
    for (const auto& r : *refs) {
      if (r.is_object() && r.contains("uid") && r["uid"].is_string()) out.push_back(r["uid"].get<std::string>());
    }
    return out;
  };
}

IndexFunc IndexByLabel(std::string label) {
  return [label = std::move(label)](const json& obj) -> std::vector<std::string> {
    auto m = obj.find("metadata");
    if (m == obj.end() || !m->is_object()) return {};
    auto labels = m->find("labels");
    if (labels == m->end() || !labels->is_object()) return {};
    auto v = labels->find(label);
    if (v == labels->end() || !v->is_string() || v->get_ref<const std::string&>().empty()) return {};
    return {v->get<std::string>()};
  };
}

namespace {
std::map<std::string, IndexFunc> WithNamespace(std::map<std::string, IndexFunc> indexers) {
  indexers.emplace(kNamespaceIndex, IndexByNamespace());
  return indexers;
}
}  // namespace

Store::Store(std::map<std::string, IndexFunc> indexers) : indexers_(WithNamespace(std::move(indexers))) {}

void Store::IndexLocked(const std::string& key, const json& obj) {
  for (const auto& [name, fn] : indexers_) {
    for (const auto& v : fn(obj)) indices_[name][v].insert(key);
  }
}

void Store::UnindexLocked(const std::string& key, const json& obj) {
  for (const auto& [name, fn] : indexers_) {
    auto& index = indices_[name];
    for (const auto& v : fn(obj)) {
      auto it = index.find(v);
      if (it == index.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.erase(it);
    }
  }
}

ObjectPtr Store::Upsert(const std::string& key, ObjectPtr object) {
  std::lock_guard<std::mutex> lock(mu_);
  ObjectPtr& slot = items_[key];
  ObjectPtr old = std::move(slot);
  if (old) UnindexLocked(key, *old);
  IndexLocked(key, *object);
  slot = std::move(object);
  return old;
}

ObjectPtr Store::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  items_.erase(it);
  UnindexLocked(key, *old);
  return old;
}

void Store::Replace(std::unordered_map<std::string, ObjectPtr> objects) {
  std::lock_guard<std::mutex> lock(mu_);
  items_ = std::move(objects);
  indices_.clear();
  for (const auto& [key, obj] : items_) IndexLocked(key, *obj);
}

ObjectPtr Store::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(v);
  return out;
}

std::vector<std::string> Store::Keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

size_t Store::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

std::vector<std::string> Store::IndexKeys(const std::string& index, const std::string& value) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto i = indices_.find(index);
  if (i == indices_.end()) return {};
  auto v = i->second.find(value);
  if (v == i->second.end()) return {};
  return {v->second.begin(), v->second.end()};
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  auto i = indices_.find(index);
  if (i == indices_.end()) return out;
  auto v = i->second.find(value);
  if (v == i->second.end()) return out;
  for (const auto& key : v->second) {
    auto it = items_.find(key);
    if (it != items_.end()) out.push_back(it->second);
  }
  return out;
}

}  // namespace ringmaster::kube
