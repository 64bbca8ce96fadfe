#include "worker-runtime/data/sample_cursor.h"

#include <nlohmann/json.hpp>

namespace ringmaster::data {

namespace {
constexpr int kCursorVersion = 1;

// Reads an unsigned field; false when missing or not a non-negative integer.
bool ReadUnsigned(const nlohmann::json& object, const char* key, uint64_t* out) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) return false;
  *out = it->get<uint64_t>();
  return true;
}
}  // namespace

std::string CursorToString(const SampleCursor& cursor) {
  return "epoch=" + std::to_string(cursor.epoch) + " committed=" + std::to_string(cursor.committed);
}

std::string EncodeCursor(const SampleCursor& cursor) {
  nlohmann::json j = {{"version", kCursorVersion}, {"epoch", cursor.epoch}, {"committed", cursor.committed}};
  return j.dump();
}

StatusOr<SampleCursor> DecodeCursor(std::string_view bytes) {
  // Non-throwing parse: a discarded value marks invalid input.
  const nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return DataLossError("sample cursor: not a JSON object");
  uint64_t version = 0;
  if (!ReadUnsigned(j, "version", &version) || version != kCursorVersion) {
    return DataLossError("sample cursor: missing or unsupported \"version\" (want 1)");
  }
  SampleCursor cursor;
  if (!ReadUnsigned(j, "epoch", &cursor.epoch)) {
    return DataLossError("sample cursor: \"epoch\" missing or not a non-negative integer");
  }
  if (!ReadUnsigned(j, "committed", &cursor.committed)) {
    return DataLossError("sample cursor: \"committed\" missing or not a non-negative integer");
  }
  return cursor;
}

}  // namespace ringmaster::data
