#include "worker-runtime/checkpoint/manifest.h"

#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "base/time_format.h"

namespace ringmaster::checkpoint {
namespace {

constexpr std::string_view kFormatName = "ringmaster-checkpoint";

std::string Hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool ParseHex32(const std::string& s, uint32_t* out) {
  if (s.size() != 8) return false;
  uint32_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<uint32_t>(c - 'a' + 10);
    else
      return false;
  }
  *out = v;
  return true;
}

}  // namespace

Status ValidateBlobName(std::string_view name) {
  if (name.empty() || name.size() > 128) return InvalidArgumentError("blob name must have 1-128 characters");
  if (name.front() == '.') return InvalidArgumentError("blob name \"" + std::string(name) + "\" starts with '.'");
  if (name == kManifestFileName) return InvalidArgumentError("blob name \"" + std::string(name) + "\" is reserved");
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return InvalidArgumentError("blob name \"" + std::string(name) + "\" may only contain [A-Za-z0-9._-]");
    }
  }
  return Status::Ok();
}

std::string SerializeManifest(const Manifest& manifest) {
  nlohmann::json blobs = nlohmann::json::array();
  for (const BlobInfo& blob : manifest.blobs) {
    blobs.push_back({{"name", blob.name}, {"size", blob.size}, {"crc32c", Hex32(blob.crc32c)}});
  }
  nlohmann::json j = {{"format", kFormatName},
                      {"format_version", manifest.format_version},
                      {"step", manifest.step},
                      {"world_size", manifest.world_size},
                      {"created_unix_ms", manifest.created_unix_ms},
                      {"created_at", FormatUnixMillisRfc3339(manifest.created_unix_ms)},
                      {"checksum", "crc32c"},
                      {"blobs", std::move(blobs)}};
  return j.dump(1) + "\n";
}

StatusOr<Manifest> ParseManifest(std::string_view bytes, const std::string& path) {
  auto bad = [&path](const std::string& what) { return DataLossError(path + ": " + what); };
  const nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON (" + std::to_string(bytes.size()) + " bytes)");
  if (!j.is_object()) return bad("not a JSON object");

  auto string_field = [&j](const char* key, std::string* out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  auto int_field = [](const nlohmann::json& obj, const char* key, int64_t* out) {
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_number_integer()) return false;
    *out = it->get<int64_t>();
    return true;
  };

  std::string format, checksum;
  if (!string_field("format", &format) || format != kFormatName) return bad("\"format\" is not ringmaster-checkpoint");
  int64_t version = 0;
  if (!int_field(j, "format_version", &version) || version != kManifestFormatVersion) {
    return bad("unsupported \"format_version\" (want " + std::to_string(kManifestFormatVersion) + ")");
  }
  if (!string_field("checksum", &checksum) || checksum != "crc32c") return bad("\"checksum\" is not crc32c");
  Manifest m;
  m.format_version = static_cast<int>(version);
  int64_t world = 0;
  if (!int_field(j, "step", &m.step) || m.step < 0) return bad("\"step\" missing or negative");
  if (!int_field(j, "world_size", &world) || world < 1 || world > UINT32_MAX) {
    return bad("\"world_size\" missing or out of range");
  }
  m.world_size = static_cast<uint32_t>(world);
  if (!int_field(j, "created_unix_ms", &m.created_unix_ms)) return bad("\"created_unix_ms\" missing");

  const auto blobs = j.find("blobs");
  if (blobs == j.end() || !blobs->is_array()) return bad("\"blobs\" missing or not an array");
  std::set<std::string> names;
  for (const nlohmann::json& entry : *blobs) {
    if (!entry.is_object()) return bad("a \"blobs\" entry is not an object");
    BlobInfo blob;
    const auto name = entry.find("name");
    const auto crc = entry.find("crc32c");
    int64_t size = 0;
    if (name == entry.end() || !name->is_string()) return bad("a blob has no \"name\"");
    blob.name = name->get<std::string>();
    if (Status s = ValidateBlobName(blob.name); !s.ok()) return bad(s.message());
    if (!names.insert(blob.name).second) return bad("blob \"" + blob.name + "\" listed twice");
    if (!int_field(entry, "size", &size) || size < 0) return bad("blob \"" + blob.name + "\" has no valid \"size\"");
    blob.size = static_cast<uint64_t>(size);
    if (crc == entry.end() || !crc->is_string() || !ParseHex32(crc->get<std::string>(), &blob.crc32c)) {
      return bad("blob \"" + blob.name + "\" has no valid \"crc32c\" (8 lowercase hex digits)");
    }
    m.blobs.push_back(std::move(blob));
  }
  return m;
}

}  // namespace ringmaster::checkpoint
