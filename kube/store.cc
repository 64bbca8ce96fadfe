#include "kube/store.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

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

PackedObject PackedObject::Pack(const json& object, KeyTable& table) {
  PackedObject packed{table.Encode(object)};
  packed.bytes.shrink_to_fit();
  return packed;
}

ObjectPtr PackedObject::Unpack(const KeyTable& table) const {
  // Bytes Pack wrote with this table always decode; anything else is handed out as an empty object, never thrown.
  std::optional<json> decoded = table.Decode(bytes.data(), bytes.size());
  return std::make_shared<const json>(decoded ? std::move(*decoded) : json::object());
}

// Layout: Header, then the payload (packed bytes, or an ObjectPtr constructed in place: offset 8 keeps it
// aligned), then the key's bytes. One allocation per object where a map node, a key string and a byte vector
// took three (each with malloc's 8-byte header and 16-byte rounding).
class Store::Entry {
 public:
  static EntryPtr Packed(std::string_view key, const std::vector<std::uint8_t>& bytes) {
    Entry* e = Allocate(key, bytes.size(), /*parsed=*/false);
    if (!bytes.empty()) std::memcpy(e->payload(), bytes.data(), bytes.size());
    return EntryPtr(e);
  }
  static EntryPtr Parsed(std::string_view key, ObjectPtr object) {
    Entry* e = Allocate(key, sizeof(ObjectPtr), /*parsed=*/true);
    new (e->payload()) ObjectPtr(std::move(object));
    return EntryPtr(e);
  }
  static void Delete(Entry* e) {
    if (e->header_.parsed) e->object().~ObjectPtr();
    e->~Entry();
    ::operator delete(static_cast<void*>(e));
  }

  std::string_view key() const {
    return {reinterpret_cast<const char*>(payload()) + header_.payload_size, header_.key_size};
  }
  bool parsed() const { return header_.parsed; }
  // Parsed entries only.
  const ObjectPtr& object() const { return *std::launder(reinterpret_cast<const ObjectPtr*>(payload())); }
  // Packed entries only.
  const std::uint8_t* bytes() const { return payload(); }
  size_t byte_size() const { return header_.payload_size; }

 private:
  // A Kubernetes object is at most a few MiB (etcd's request limit) and its key at most 63 + 1 + 253 bytes.
  struct Header {
    std::uint32_t payload_size;
    std::uint32_t key_size : 31;
    std::uint32_t parsed : 1;
  };
  static_assert(sizeof(Header) == 8 && alignof(ObjectPtr) <= 8);

  Entry(size_t payload_size, size_t key_size, bool parsed)
      : header_{static_cast<std::uint32_t>(payload_size), static_cast<std::uint32_t>(key_size), parsed} {}
  static Entry* Allocate(std::string_view key, size_t payload_size, bool parsed) {
    void* block = ::operator new(sizeof(Header) + payload_size + key.size());
    Entry* e = new (block) Entry(payload_size, key.size(), parsed);
    std::memcpy(e->payload() + payload_size, key.data(), key.size());
    return e;
  }
  std::uint8_t* payload() { return reinterpret_cast<std::uint8_t*>(this) + sizeof(Header); }
  const std::uint8_t* payload() const { return reinterpret_cast<const std::uint8_t*>(this) + sizeof(Header); }
  ObjectPtr& object() { return *std::launder(reinterpret_cast<ObjectPtr*>(payload())); }

  Header header_;
};

void Store::EntryDelete::operator()(Entry* e) const { Entry::Delete(e); }

Store::EntrySet::~EntrySet() {
  for (Entry* e : slots_)
    if (e) Entry::Delete(e);
}

size_t Store::EntrySet::Home(std::string_view key) const {
  return std::hash<std::string_view>{}(key) & (slots_.size() - 1);
}

size_t Store::EntrySet::SlotOf(std::string_view key) const {
  const size_t mask = slots_.size() - 1;
  size_t i = Home(key);
  while (slots_[i] && slots_[i]->key() != key) i = (i + 1) & mask;  // never full: an empty slot ends it
  return i;
}

Store::Entry* Store::EntrySet::Find(std::string_view key) const { return size_ ? slots_[SlotOf(key)] : nullptr; }

void Store::EntrySet::Rehash(size_t capacity) {
  std::vector<Entry*> old(capacity, nullptr);
  old.swap(slots_);
  for (Entry* e : old)
    if (e) slots_[SlotOf(e->key())] = e;
}

Store::EntryPtr Store::EntrySet::Put(EntryPtr e) {
  // At most 3/4 full (a linear probe's run stays short), grown by doubling.
  if ((size_ + 1) * 4 > slots_.size() * 3) Rehash(std::max<size_t>(16, slots_.size() * 2));
  Entry*& slot = slots_[SlotOf(e->key())];
  EntryPtr replaced(slot);
  slot = e.release();
  if (!replaced) ++size_;
  return replaced;
}

Store::EntryPtr Store::EntrySet::Take(std::string_view key) {
  if (size_ == 0) return nullptr;
  const size_t mask = slots_.size() - 1;
  size_t hole = SlotOf(key);
  EntryPtr taken(slots_[hole]);
  if (!taken) return nullptr;
  slots_[hole] = nullptr;
  --size_;
  // Backward shift: move up every later entry of the run that may not live past the hole (its home is not
  // cyclically within (hole, j]), so that no probe stops at the hole before reaching it.
  for (size_t j = (hole + 1) & mask; slots_[j]; j = (j + 1) & mask) {
    const size_t home = Home(slots_[j]->key());
    const bool home_after_hole = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (home_after_hole) continue;
    slots_[hole] = slots_[j];
    slots_[j] = nullptr;
    hole = j;
  }
  // Give memory back when most objects went (a drained namespace); a relist swaps in a fresh set anyway.
  if (slots_.size() > 16 && size_ * 8 < slots_.size()) Rehash(slots_.size() / 2);
  return taken;
}

void Store::EntrySet::swap(EntrySet& other) noexcept {
  slots_.swap(other.slots_);
  std::swap(size_, other.size_);
}

Store::Store(std::map<std::string, IndexFunc> indexers, StoreOptions options)
    : indexers_(WithNamespace(std::move(indexers), options.namespace_index)),
      options_(options),
      keys_(options.packed ? std::make_shared<KeyTable>() : nullptr) {}

Store::~Store() = default;

Store::EntryPtr Store::Hold(const std::string& key, ObjectPtr object, KeyTable* table) {
  if (!table) return Entry::Parsed(key, std::move(object));
  return Entry::Packed(key, table->Encode(*object));
}

std::shared_ptr<KeyTable> Store::Table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_;
}

ObjectPtr Store::Load(const Entry& e) const {
  if (e.parsed()) return e.object();
  std::optional<json> decoded = keys_->Decode(e.bytes(), e.byte_size());
  return std::make_shared<const json>(decoded ? std::move(*decoded) : json::object());
}

bool Store::KeySet::KeyLess(const Entry* a, const Entry* b) { return a->key() < b->key(); }

void Store::KeySet::insert(const Entry* e) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), e, KeyLess);
  if (it != entries_.end() && *it == e) return;
  entries_.insert(it, e);
}

void Store::KeySet::erase(const Entry* e) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), e, KeyLess);
  if (it != entries_.end() && *it == e) entries_.erase(it);
  // A vector keeps its capacity; give it back when the set has shrunk well below it (a drained node).
  if (entries_.capacity() > 16 && entries_.size() < entries_.capacity() / 4) entries_.shrink_to_fit();
}

void Store::IndexLocked(const Entry* e, const json& obj) {
  for (const auto& [name, fn] : indexers_) {
    for (const auto& v : fn(obj)) indices_[name][v].insert(e);
  }
}

void Store::UnindexLocked(const Entry* e, const json& obj) {
  for (const auto& [name, fn] : indexers_) {
    auto& index = indices_[name];
    for (const auto& v : fn(obj)) {
      auto it = index.find(v);
      if (it == index.end()) continue;
      it->second.erase(e);
      if (it->second.empty()) index.erase(it);
    }
  }
}

ObjectPtr Store::Upsert(const std::string& key, ObjectPtr object) {
  const std::shared_ptr<KeyTable> table = Table();
  EntryPtr held = Hold(key, object, table.get());  // encoding and allocating outside the lock
  EntryPtr replaced;                               // deleted outside the lock too
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_ != table) held = Hold(key, object, keys_.get());  // swapped meanwhile
  ObjectPtr old;
  if (const Entry* current = items_.Find(key)) {
    old = Load(*current);
    UnindexLocked(current, *old);  // before the entry its index entries point at goes
  }
  const Entry* added = held.get();
  replaced = items_.Put(std::move(held));
  IndexLocked(added, *object);
  return old;
}

ObjectPtr Store::Erase(const std::string& key) {
  EntryPtr taken;  // deleted outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* current = items_.Find(key);
  if (!current) return nullptr;
  ObjectPtr old = Load(*current);
  UnindexLocked(current, *old);  // before the entry its index entries point at goes
  taken = items_.Take(key);
  return old;
}

void Store::Replace(std::unordered_map<std::string, ObjectPtr> objects) {
  const std::shared_ptr<KeyTable> table = Table();
  EntrySet held;
  for (auto& [key, obj] : objects) held.Put(Hold(key, obj, table.get()));
  std::unique_lock<std::mutex> lock(mu_);
  if (keys_ != table) {  // swapped meanwhile
    EntrySet again;
    for (auto& [key, obj] : objects) again.Put(Hold(key, obj, keys_.get()));
    held.swap(again);
  }
  indices_.clear();
  items_.swap(held);  // `held` now has the old entries, deleted after the lock
  for (const auto& [key, obj] : objects) IndexLocked(items_.Find(key), *obj);
  lock.unlock();
}

void Store::Swap(Store& other) {
  if (&other == this) return;
  std::scoped_lock lock(mu_, other.mu_);
  items_.swap(other.items_);  // entries keep their addresses: the index entries stay valid
  indices_.swap(other.indices_);
  keys_.swap(other.keys_);
}

ObjectPtr Store::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = items_.Find(key);
  return e ? Load(*e) : nullptr;
}

std::vector<ObjectPtr> Store::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  items_.ForEach([&](const Entry& e) { out.push_back(Load(e)); });
  return out;
}

std::vector<std::string> Store::Keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  items_.ForEach([&](const Entry& e) { out.emplace_back(e.key()); });
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
  for (const Entry* e : v->second) out.emplace_back(e->key());
  return out;
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  auto i = indices_.find(index);
  if (i == indices_.end()) return out;
  auto v = i->second.find(value);
  if (v == i->second.end()) return out;
  out.reserve(v->second.size());
  for (const Entry* e : v->second) out.push_back(Load(*e));
  return out;
}

}  // namespace ringmaster::kube
