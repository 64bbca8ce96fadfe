// Reading nested fields of JSON objects (API objects, records) by a path of keys, without copying and
// without throwing: a missing step or a value of another type gives the fallback. The one JSON-path
// helper of the project. (nlohmann::json's value(key, default) returns a copy, which for the
// metadata/spec/status of every pod on every reconcile dominated the operator's CPU at 60 jobs x 8
// workers; these return references.)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

namespace ringmaster {

// The value at `path` (object keys), or a reference to a static null when any step is missing or not
// an object. Never copies; thread-safe.
inline const nlohmann::json& At(const nlohmann::json& j, std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(key);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

// The string at `path`, or "".
inline std::string StringAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json& v = At(j, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// The integer at `path`, or `fallback`.
inline int64_t IntAt(const nlohmann::json& j, std::initializer_list<const char*> path, int64_t fallback = 0) {
  const nlohmann::json& v = At(j, path);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

// Iterable view of the array at `path` (empty when absent or not an array).
inline const nlohmann::json& ArrayAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& v = At(j, path);
  return v.is_array() ? v : kEmpty;
}

}  // namespace ringmaster
