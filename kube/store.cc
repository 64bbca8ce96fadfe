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

PackedObject PackedObject::Pack(const json& object) {
  PackedObject packed{json::to_cbor(object)};
  packed.cbor.shrink_to_fit();
  return packed;
}

ObjectPtr PackedObject::Unpack() const {
  // strict, no exceptions: a decode error (impossible for bytes to_cbor wrote) yields a discarded value,
  // handed out as an empty object rather than thrown through the callers.
  json decoded = json::from_cbor(cbor, /*strict=*/true, /*allow_exceptions=*/false);
  if (decoded.is_discarded()) decoded = json::object();
  return std::make_shared<const json>(std::move(decoded));
}

Store::Store(std::map<std::string, IndexFunc> indexers, StoreOptions options)
    : indexers_(WithNamespace(std::move(indexers))), options_(options) {}

Store::Item Store::Hold(ObjectPtr object) const {
  if (!options_.packed) return {std::move(object), {}};
  return {nullptr, PackedObject::Pack(*object)};
}

ObjectPtr Store::Load(const Item& item) {
  if (item.object) return item.object;
  return item.packed.Unpack();
}

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
  Item held = Hold(object);  // encoding outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  Item& slot = items_[key];
  ObjectPtr old = slot.object || !slot.packed.empty() ? Load(slot) : nullptr;
  if (old) UnindexLocked(key, *old);
  IndexLocked(key, *object);
  slot = std::move(held);
  return old;
}

ObjectPtr Store::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = Load(it->second);
  items_.erase(it);
  UnindexLocked(key, *old);
  return old;
}

void Store::Replace(std::unordered_map<std::string, ObjectPtr> objects) {
  std::unordered_map<std::string, Item> held;
  held.reserve(objects.size());
  for (auto& [key, obj] : objects) held.emplace(key, Hold(obj));
  std::lock_guard<std::mutex> lock(mu_);
  items_ = std::move(held);
  indices_.clear();
  for (const auto& [key, obj] : objects) IndexLocked(key, *obj);
}

ObjectPtr Store::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : Load(it->second);
}

std::vector<ObjectPtr> Store::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(Load(v));
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
    if (it != items_.end()) out.push_back(Load(it->second));
  }
  return out;
}

}  // namespace ringmaster::kube
