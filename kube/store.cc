#include "kube/store.h"

#include <algorithm>

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
std::map<std::string, IndexFunc> WithNamespace(std::map<std::string, IndexFunc> indexers, bool add) {
  if (add) indexers.emplace(kNamespaceIndex, IndexByNamespace());
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
    : indexers_(WithNamespace(std::move(indexers), options.namespace_index)),
      options_(options),
      keys_(options.packed ? std::make_shared<KeyTable>() : nullptr) {}

Store::Item Store::Hold(ObjectPtr object, KeyTable* table) const {
  if (!table) return {std::move(object), {}};
  return {nullptr, table->Encode(*object)};
}

std::shared_ptr<KeyTable> Store::Table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_;
}

ObjectPtr Store::Load(const Item& item) const {
  if (item.object) return item.object;
  std::optional<json> decoded = keys_->Decode(item.packed.data(), item.packed.size());
  return std::make_shared<const json>(decoded ? std::move(*decoded) : json::object());
}

namespace {
bool KeyLess(const std::string* a, const std::string* b) { return *a < *b; }
}  // namespace

void Store::KeySet::insert(const std::string* key) {
  auto it = std::lower_bound(keys_.begin(), keys_.end(), key, KeyLess);
  if (it != keys_.end() && *it == key) return;
  keys_.insert(it, key);
}

void Store::KeySet::erase(const std::string* key) {
  auto it = std::lower_bound(keys_.begin(), keys_.end(), key, KeyLess);
  if (it != keys_.end() && *it == key) keys_.erase(it);
  // A vector keeps its capacity; give it back when the set has shrunk well below it (a drained node).
  if (keys_.capacity() > 16 && keys_.size() < keys_.capacity() / 4) keys_.shrink_to_fit();
}

void Store::IndexLocked(const std::string* key, const json& obj) {
  for (const auto& [name, fn] : indexers_) {
    for (const auto& v : fn(obj)) indices_[name][v].insert(key);
  }
}

void Store::UnindexLocked(const std::string* key, const json& obj) {
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
  const std::shared_ptr<KeyTable> table = Table();
  Item held = Hold(object, table.get());  // encoding outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_ != table) held = Hold(object, keys_.get());  // swapped meanwhile
  auto [it, inserted] = items_.try_emplace(key);
  Item& slot = it->second;
  ObjectPtr old = inserted ? nullptr : Load(slot);
  if (old) UnindexLocked(&it->first, *old);
  IndexLocked(&it->first, *object);
  slot = std::move(held);
  return old;
}

ObjectPtr Store::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = Load(it->second);
  UnindexLocked(&it->first, *old);  // before the key it points at goes
  items_.erase(it);
  return old;
}

void Store::Replace(std::unordered_map<std::string, ObjectPtr> objects) {
  const std::shared_ptr<KeyTable> table = Table();
  std::unordered_map<std::string, Item> held;
  held.reserve(objects.size());
  for (auto& [key, obj] : objects) held.emplace(key, Hold(obj, table.get()));
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_ != table)  // swapped meanwhile
    for (auto& [key, item] : held) item = Hold(objects[key], keys_.get());
  indices_.clear();
  items_ = std::move(held);  // the nodes move with their keys: pointers into them stay valid
  for (const auto& [key, obj] : objects) IndexLocked(&items_.find(key)->first, *obj);
}

void Store::Swap(Store& other) {
  if (&other == this) return;
  std::scoped_lock lock(mu_, other.mu_);
  items_.swap(other.items_);  // nodes keep their addresses: the index entries stay valid
  indices_.swap(other.indices_);
  keys_.swap(other.keys_);
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
  std::vector<std::string> out;
  out.reserve(v->second.size());
  for (const std::string* key : v->second) out.push_back(*key);
  return out;
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  auto i = indices_.find(index);
  if (i == indices_.end()) return out;
  auto v = i->second.find(value);
  if (v == i->second.end()) return out;
  for (const std::string* key : v->second) {
    auto it = items_.find(*key);
    if (it != items_.end()) out.push_back(Load(it->second));
  }
  return out;
}

}  // namespace ringmaster::kube
