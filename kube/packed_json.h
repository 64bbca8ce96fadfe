// PackedJson: a compact binary form of JSON values for caches that hold many objects of one kind (a packed
// Store: 80,000 worker pods). Like CBOR, but an object's keys are small numbers into a KeyTable that every
// object of the cache shares: in a slim pod half the bytes of its CBOR are the same dozen keys ("metadata",
// "resourceVersion", "lastTransitionTime", ...) repeated, and here each costs one byte.
//
// Encoding (each value starts with a tag byte; counts and lengths are LEB128 varints):
//   null, false, true | unsigned (varint) | signed (zigzag varint) | double (8 bytes, little-endian)
//   | string (length, bytes) | binary (length, bytes; the subtype is not kept) | array (count, values)
//   | object (count, then per member: a key reference and the value). A key reference is 1 + the key's id
//   in the table, or 0 followed by the key as a string (length, bytes) for a key the table did not take.
// Three kinds of strings have shorter forms, used only where the string renders back byte for byte: a
// lowercase UUID (16 bytes: every uid), an RFC 3339 UTC time in whole seconds (a varint: the timestamps the
// apiserver writes) and a dotted-quad IPv4 address (4 bytes); about a quarter of a slim pod's bytes. And a
// string of kMinRepeatedString bytes or more that the same value already holds is a reference to the first
// (a job's membership message is in its status twice, a node's name in many members).
// And a string that the table holds is a reference to it (1 + its id, as for keys): the table takes a member's
// string value as it takes keys while that member has shown few distinct values (kMaxValuesPerKey: "phase",
// "type", "status", "reason" take a handful each), so the words every object repeats ("Running", "Ready",
// "True") cost a byte or two, and a member of many values ("name", "uid") stops taking them.
// Types round-trip exactly (an unsigned stays unsigned, 2.0 stays a double); object member order is the
// json's own (sorted).
//
// The table takes at most `max_keys` keys and values of at most `max_key_length` bytes, first come first served,
// and never forgets one: keys beyond (a ConfigMap's data keyed by pod name, say) and values beyond are written
// out in full, so the table's memory stays bounded whatever the objects hold.
// Thread-safety: thread-safe (Encode and Decode lock the table briefly). Errors: Decode of bytes Encode did
// not write returns nullopt (never throws).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringmaster::kube {

// Strings this long or longer are written once per encoded value; a repeat refers back to the first.
inline constexpr size_t kMinRepeatedString = 12;
// A member whose string values have been this many distinct strings takes no more into the table.
inline constexpr size_t kMaxValuesPerKey = 16;

class KeyTable {
 public:
  explicit KeyTable(size_t max_keys = 4096, size_t max_key_length = 64);
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;

  // `value` in the packed form, its keys interned into this table.
  std::vector<std::uint8_t> Encode(const nlohmann::json& value);
  // The value `Encode` wrote to these bytes; nullopt when they are not such a value (truncated, a bad tag,
  // a key id this table never gave out).
  std::optional<nlohmann::json> Decode(const std::uint8_t* data, size_t size) const;

  size_t size() const;

 private:
  // The id of `key`, interning it when the table has room; -1 when it is written out in full.
  int64_t IdLocked(const std::string& key);
  // The id of `value`, the string value of member `key_id` (-1: an unknown key, or no member): its id when the
  // table holds it, else interned while that member has taken fewer than kMaxValuesPerKey; -1 otherwise.
  int64_t ValueIdLocked(const std::string& value, int64_t key_id);
  // Long strings already written in the value being encoded, by content: their order of first appearance.
  using WrittenStrings = std::unordered_map<std::string_view, uint32_t>;
  // `key_id`: the member `value` is the value of (or an element of, for an array), -1 when none or unknown.
  void EncodeLocked(const nlohmann::json& value, int64_t key_id, std::vector<std::uint8_t>& out,
                    WrittenStrings& written);

  // Constant after construction.
  const size_t max_keys_, max_key_length_;
  // Guarded by mu_. keys_ is a deque: ids_ points into it, and it only grows.
  mutable std::mutex mu_;
  std::deque<std::string> keys_;  // keys and string values, one id space
  std::unordered_map<std::string_view, uint32_t> ids_;
  // By key id: the distinct string values that member took (their ids), until it has taken kMaxValuesPerKey.
  struct MemberValues {
    std::vector<uint32_t> ids;
    bool closed = false;  // took its kMaxValuesPerKey: takes no more (ids emptied)
  };
  std::vector<MemberValues> member_values_;
};

}  // namespace ringmaster::kube
