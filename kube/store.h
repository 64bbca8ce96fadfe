// Store: the informer's thread-safe, indexed cache of objects (client-go's ThreadSafeStore + Indexer).
//
// Objects are immutable snapshots (ObjectPtr); a reader may keep one as long as it likes. Keys are
// "namespace/name" (ObjectKey). A Store has the "namespace" index unless StoreOptions say not; more come from
// the indexers passed at construction (e.g. pods by owner uid).
//
// A packed Store (StoreOptions::packed) keeps each object as bytes (packed_json.h: CBOR-like, its keys numbers
// into one KeyTable per Store) and decodes it at every read: a parsed nlohmann::json spends a tree node, a key
// string and an allocation on every field, so a pod of 1 KB of CBOR takes 6-9 KB parsed, and in CBOR half a
// slim pod's bytes are its keys. A read then costs a decode (microseconds for a slim pod) and every reader
// gets its own snapshot; an unpacked Store hands out the one it holds. Index entries point at the Store's own
// copy of each key (a cache of 80,000 pods with three indexes held a quarter of a million key copies).
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/packed_json.h"

namespace ringmaster::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;
// Returns the index values of an object (may be empty). Must be pure and thread-safe.
using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json&)>;

inline constexpr char kNamespaceIndex[] = "namespace";
// metadata.namespace.
IndexFunc IndexByNamespace();
// The uid of every metadata.ownerReferences entry (pods by their job's uid).
IndexFunc IndexByOwnerUid();
// The value of one label ("" values are not indexed).
IndexFunc IndexByLabel(std::string label);

// An object kept as CBOR bytes (what a packed Store holds; see above): Pack encodes, Unpack decodes a
// fresh snapshot. Unpack cannot fail on bytes Pack wrote (it would hand out an empty object, not throw).
struct PackedObject {
  std::vector<std::uint8_t> cbor;

  static PackedObject Pack(const nlohmann::json& object);
  ObjectPtr Unpack() const;
  bool empty() const { return cbor.empty(); }
};

struct StoreOptions {
  bool packed = false;  // keep objects packed, decoded at each read (see above)
  // The "namespace" index: off for a large cache nobody asks by namespace (80,000 pods: 4 MB of entries).
  bool namespace_index = true;
};

class Store {
 public:
  explicit Store(std::map<std::string, IndexFunc> indexers = {}, StoreOptions options = {});

  // Inserts or replaces; returns the previous object (nullptr when new).
  ObjectPtr Upsert(const std::string& key, ObjectPtr object);
  // Removes; returns the removed object (nullptr when absent).
  ObjectPtr Erase(const std::string& key);
  // Replaces the whole content.
  void Replace(std::unordered_map<std::string, ObjectPtr> objects);
  // Exchanges the contents (objects, indices, packing) of this Store and `other`, which must have been built
  // with the same indexers and options: a relist fills a staged Store page by page, packed as it goes, and
  // swaps it in whole (Replace would need every object parsed at once).
  void Swap(Store& other);

  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  std::vector<std::string> Keys() const;
  size_t Size() const;
  // Objects whose index `index` yields `value`; empty for an unknown index.
  std::vector<ObjectPtr> ByIndex(const std::string& index, const std::string& value) const;
  std::vector<std::string> IndexKeys(const std::string& index, const std::string& value) const;

 private:
  // An object as held: parsed (unpacked Store) or packed bytes (keys_'s encoding).
  struct Item {
    ObjectPtr object;
    std::vector<std::uint8_t> packed;
  };
  // Index entries: pointers to the keys of items_ (stable until that item is erased), in key order. A sorted
  // vector, not a std::set: a value indexes a handful of keys (a job's pods) to a few hundred (a node's), and a
  // set node costs 48 bytes per entry where a vector slot costs 8 (80,000 pods in two indexes: 7 MB vs 1.3 MB).
  class KeySet {
   public:
    void insert(const std::string* key);
    void erase(const std::string* key);
    bool empty() const { return keys_.empty(); }
    size_t size() const { return keys_.size(); }
    std::vector<const std::string*>::const_iterator begin() const { return keys_.begin(); }
    std::vector<const std::string*>::const_iterator end() const { return keys_.end(); }

   private:
    std::vector<const std::string*> keys_;
  };
  // `object` as held, packed with `table` (null: unpacked).
  Item Hold(ObjectPtr object, KeyTable* table) const;
  std::shared_ptr<KeyTable> Table() const;
  // The object of `item`. Cannot fail: the bytes are this Store's own encoding (an empty object if they were
  // not, never an exception).
  ObjectPtr Load(const Item& item) const;
  // `key` must point at the key of an element of items_.
  void IndexLocked(const std::string* key, const nlohmann::json& obj);
  void UnindexLocked(const std::string* key, const nlohmann::json& obj);

  // Constant after construction.
  const std::map<std::string, IndexFunc> indexers_;
  const StoreOptions options_;
  // Packed Stores only; thread-safe itself. Swap exchanges it, so writers encode with the table they read under
  // mu_ and encode again (under mu_) in the rare case it was swapped meanwhile.
  std::shared_ptr<KeyTable> keys_;
  // Guarded by mu_.
  mutable std::mutex mu_;
  std::unordered_map<std::string, Item> items_;
  std::map<std::string, std::unordered_map<std::string, KeySet>> indices_;  // index → value → keys
};

}  // namespace ringmaster::kube
