// Strict, non-throwing reads of one field of a JSON object, for the contract's decoders. A field that is
// absent or null leaves the output untouched; a field of the wrong type is InvalidArgument
// "<path>: expected <type>, got <type>", where <path> is the dotted path of the field ("spec.replicas.min").
// These never throw (nlohmann's value()/get<>()/at() do on a type mismatch).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::api {

// "string", "integer", "number", "boolean", "object", "array" or "null".
std::string JsonTypeName(const nlohmann::json& j);
// "<prefix>.<key>", or "<key>" when prefix is empty.
std::string FieldPath(std::string_view prefix, std::string_view key);
// InvalidArgument "<path>: expected <want>, got <type of got>".
Status WrongType(std::string_view path, std::string_view want, const nlohmann::json& got);

// `obj` must be an object (or null: then nothing is read). `prefix` is obj's own path.
Status ReadString(const nlohmann::json& obj, std::string_view prefix, const char* key, std::string* out);
Status ReadInt(const nlohmann::json& obj, std::string_view prefix, const char* key, int64_t* out);
Status ReadInt(const nlohmann::json& obj, std::string_view prefix, const char* key, int32_t* out);
Status ReadInt(const nlohmann::json& obj, std::string_view prefix, const char* key, std::optional<int64_t>* out);
Status ReadBool(const nlohmann::json& obj, std::string_view prefix, const char* key, bool* out);
// The field when it is an object (copied into *out); wrong type is an error.
Status ReadObject(const nlohmann::json& obj, std::string_view prefix, const char* key, nlohmann::json* out);
// A pointer to the field when it is an object or an array (as asked), nullptr when absent or null;
// InvalidArgument for any other type.
StatusOr<const nlohmann::json*> ObjectField(const nlohmann::json& obj, std::string_view prefix, const char* key);
StatusOr<const nlohmann::json*> ArrayField(const nlohmann::json& obj, std::string_view prefix, const char* key);

}  // namespace ringmaster::api
