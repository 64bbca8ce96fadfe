// The manifest of one checkpoint: MANIFEST.json, written last inside the step
// directory. A checkpoint is complete exactly when its manifest parses and
// every blob it lists is present with the listed size and CRC32C.
//
// {"format":"ringmaster-checkpoint","format_version":1,"step":1200,
//  "world_size":8,"created_unix_ms":1717200000000,
//  "created_at":"2024-06-01T00:00:00.000Z","checksum":"crc32c",
//  "blobs":[{"name":"model","size":1048576,"crc32c":"e3069283"}, ...]}
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ringmaster::checkpoint {

inline constexpr int kManifestFormatVersion = 1;
inline constexpr std::string_view kManifestFileName = "MANIFEST.json";

struct BlobInfo {
  std::string name;  // also the file name inside the step directory
  uint64_t size = 0;
  uint32_t crc32c = 0;

  bool operator==(const BlobInfo&) const = default;
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  int64_t step = 0;
  uint32_t world_size = 0;
  int64_t created_unix_ms = 0;
  std::vector<BlobInfo> blobs;

  bool operator==(const Manifest&) const = default;
};

// OK when `name` can be a blob: 1-128 characters of [A-Za-z0-9._-], not
// starting with '.', and not the manifest's own name. Errors: InvalidArgument.
Status ValidateBlobName(std::string_view name);

std::string SerializeManifest(const Manifest& manifest);

// Parses and validates a manifest read from `path` (used in messages only).
// Errors: DataLoss naming `path` and the problem (not JSON, wrong format or
// version, a missing or mistyped field, a bad or duplicate blob name). Never
// throws, whatever the bytes.
StatusOr<Manifest> ParseManifest(std::string_view bytes, const std::string& path);

}  // namespace ringmaster::checkpoint
