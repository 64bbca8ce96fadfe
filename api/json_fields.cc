#include "api/json_fields.h"

#include <limits>

namespace ringmaster::api {

using json = nlohmann::json;

namespace {

// The field `key` of `obj`, or nullptr when obj is not an object, the key is absent, or its value is null.
const json* Field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// The field when `is` holds for it, nullptr when it is absent or null; WrongType naming `want` otherwise.
StatusOr<const json*> TypedField(const json& obj, std::string_view prefix, const char* key,
                                 bool (json::*is)() const noexcept, std::string_view want) {
  const json* v = Field(obj, key);
  if (v != nullptr && !(v->*is)()) return WrongType(FieldPath(prefix, key), want, *v);
  return v;
}

}  // namespace

std::string JsonTypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::string: return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::boolean: return "boolean";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::null: return "null";
    default: return "binary";
  }
}

std::string FieldPath(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return std::string(prefix) + "." + std::string(key);
}

Status WrongType(std::string_view path, std::string_view want, const json& got) {
  return InvalidArgumentError(std::string(path) + ": expected " + std::string(want) + ", got " + JsonTypeName(got));
}

Status ReadString(const json& obj, std::string_view prefix, const char* key, std::string* out) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* v, TypedField(obj, prefix, key, &json::is_string, "string"));
  if (v != nullptr) *out = v->get_ref<const std::string&>();
  return Status::Ok();
}

Status ReadInt(const json& obj, std::string_view prefix, const char* key, int64_t* out) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* v, TypedField(obj, prefix, key, &json::is_number_integer, "integer"));
  if (v == nullptr) return Status::Ok();
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgumentError(FieldPath(prefix, key) + ": " + v->dump() + " is out of range");
  }
  *out = v->get<int64_t>();
  return Status::Ok();
}

Status ReadInt(const json& obj, std::string_view prefix, const char* key, int32_t* out) {
  int64_t wide = *out;
  RINGMASTER_RETURN_IF_ERROR(ReadInt(obj, prefix, key, &wide));
  if (wide < std::numeric_limits<int32_t>::min() || wide > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError(FieldPath(prefix, key) + ": " + std::to_string(wide) + " is out of range");
  }
  *out = static_cast<int32_t>(wide);
  return Status::Ok();
}

Status ReadInt(const json& obj, std::string_view prefix, const char* key, std::optional<int64_t>* out) {
  if (Field(obj, key) == nullptr) return Status::Ok();
  int64_t v = 0;
  RINGMASTER_RETURN_IF_ERROR(ReadInt(obj, prefix, key, &v));
  *out = v;
  return Status::Ok();
}

Status ReadBool(const json& obj, std::string_view prefix, const char* key, bool* out) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* v, TypedField(obj, prefix, key, &json::is_boolean, "boolean"));
  if (v != nullptr) *out = v->get<bool>();
  return Status::Ok();
}

Status ReadObject(const json& obj, std::string_view prefix, const char* key, json* out) {
  RINGMASTER_ASSIGN_OR_RETURN(const json* v, ObjectField(obj, prefix, key));
  if (v != nullptr) *out = *v;
  return Status::Ok();
}

StatusOr<const json*> ObjectField(const json& obj, std::string_view prefix, const char* key) {
  return TypedField(obj, prefix, key, &json::is_object, "object");
}

StatusOr<const json*> ArrayField(const json& obj, std::string_view prefix, const char* key) {
  return TypedField(obj, prefix, key, &json::is_array, "array");
}

}  // namespace ringmaster::api
