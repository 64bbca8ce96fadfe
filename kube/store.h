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
// gets its own snapshot; an unpacked Store hands out the one it holds. Each object is one heap block holding its
// key and its packed bytes (or its ObjectPtr), found by key in an open-addressing table of pointers, and index
// entries point at those blocks: a slim pod costs its packed bytes plus about 90 bytes (Store's memory test prints it).
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
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

// An object kept packed outside a Store (records a controller keeps beside its caches until a watch catches up):
// Pack encodes with `table` (packed_json.h; the keeper's own, shared by all its records: plain CBOR would spell
// out every key of every record, 2.4 times the bytes for a job), Unpack decodes a fresh snapshot with the same
// table. Unpack cannot fail on bytes Pack wrote with that table (it would hand out an empty object, not throw).
struct PackedObject {
  std::vector<std::uint8_t> bytes;

  static PackedObject Pack(const nlohmann::json& object, KeyTable& table);
  ObjectPtr Unpack(const KeyTable& table) const;
  bool empty() const { return bytes.empty(); }
};

struct StoreOptions {
  bool packed = false;  // keep objects packed, decoded at each read (see above)
  // The "namespace" index: off for a large cache nobody asks by namespace (80,000 pods: 4 MB of entries).
  bool namespace_index = true;
};

class Store {
 public:
  explicit Store(std::map<std::string, IndexFunc> indexers = {}, StoreOptions options = {});
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

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
  // One object as held, in one heap block with its key: the packed bytes (packed Store) or its ObjectPtr.
  // Defined in store.cc. Owned by the EntrySet that holds it; immutable once made (an update makes a new one).
  class Entry;
  struct EntryDelete {
    void operator()(Entry* e) const;
  };
  using EntryPtr = std::unique_ptr<Entry, EntryDelete>;
  // The entries by key: open addressing (linear probing) over a power-of-two array of pointers, at most
  // three quarters full. A node-based hash map would spend a node (next pointer, cached hash, the key object)
  // and a bucket slot on each object: 40-100 bytes where a slot here costs 8-21.
  class EntrySet {
   public:
    EntrySet() = default;
    EntrySet(const EntrySet&) = delete;
    EntrySet& operator=(const EntrySet&) = delete;
    ~EntrySet();  // deletes the entries

    Entry* Find(std::string_view key) const;
    // Holds `e`; returns the entry of the same key it replaces (nullptr when new): the caller's to delete.
    EntryPtr Put(EntryPtr e);
    // Stops holding the entry of `key` and hands it over (nullptr when absent).
    EntryPtr Take(std::string_view key);
    size_t size() const { return size_; }
    void swap(EntrySet& other) noexcept;
    template <typename F>
    void ForEach(F f) const {
      for (const Entry* e : slots_)
        if (e) f(*e);
    }

   private:
    size_t Home(std::string_view key) const;    // the slot a key hashes to
    size_t SlotOf(std::string_view key) const;  // its slot, or the empty one where it would go
    void Rehash(size_t capacity);

    std::vector<Entry*> slots_;  // nullptr: empty; size a power of two (or 0)
    size_t size_ = 0;
  };
  // Index entries: pointers to the entries of items_ (valid until that entry is replaced or erased, when it is
  // unindexed first), in key order. A sorted vector, not a std::set: a value indexes a handful of keys (a job's
  // pods) to a few hundred (a node's), and a set node costs 48 bytes per entry where a vector slot costs 8.
  class KeySet {
   public:
    void insert(const Entry* e);
    void erase(const Entry* e);
    bool empty() const { return entries_.empty(); }
    size_t size() const { return entries_.size(); }
    std::vector<const Entry*>::const_iterator begin() const { return entries_.begin(); }
    std::vector<const Entry*>::const_iterator end() const { return entries_.end(); }

   private:
    static bool KeyLess(const Entry* a, const Entry* b);
    std::vector<const Entry*> entries_;
  };
  // `object` under `key` as held: packed with `table`, or as is when `table` is null (unpacked Store).
  static EntryPtr Hold(const std::string& key, ObjectPtr object, KeyTable* table);
  std::shared_ptr<KeyTable> Table() const;
  // The object of `e`. Cannot fail: the bytes are this Store's own encoding (an empty object if they were
  // not, never an exception).
  ObjectPtr Load(const Entry& e) const;
  // `e` must be an entry of items_.
  void IndexLocked(const Entry* e, const nlohmann::json& obj);
  void UnindexLocked(const Entry* e, const nlohmann::json& obj);

  // Constant after construction.
  const std::map<std::string, IndexFunc> indexers_;
  const StoreOptions options_;
  // Packed Stores only; thread-safe itself. Swap exchanges it, so writers encode with the table they read under
  // mu_ and encode again (under mu_) in the rare case it was swapped meanwhile.
  std::shared_ptr<KeyTable> keys_;
  // Guarded by mu_.
  mutable std::mutex mu_;
  EntrySet items_;
  std::map<std::string, std::unordered_map<std::string, KeySet>> indices_;  // index → value → keys
};

}  // namespace ringmaster::kube
