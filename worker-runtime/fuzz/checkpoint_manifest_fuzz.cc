// libFuzzer target: a checkpoint's MANIFEST.json as a loader reads it (checkpoint::ParseManifest), and
// the step directory names it lists (ParseStepDirName). Whatever the bytes: no crash, no exception, a
// DataLoss error naming the file; a manifest that parses is valid (blob names pass ValidateBlobName,
// none twice) and SerializeManifest -> ParseManifest gives it back unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/checkpoint/manifest.h"

namespace ckpt = ringmaster::checkpoint;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = "/ckpt/step-1/MANIFEST.json";
  auto manifest = ckpt::ParseManifest(bytes, path);
  if (!manifest.ok()) {
    Check(manifest.status().code() == ringmaster::StatusCode::kDataLoss);
    Check(manifest.status().message().starts_with(path + ": "));
  } else {
    Check(manifest->step >= 0 && manifest->world_size >= 1);
    std::set<std::string> names;
    for (const ckpt::BlobInfo& blob : manifest->blobs) {
      Check(ckpt::ValidateBlobName(blob.name).ok() && names.insert(blob.name).second);
    }
    auto again = ckpt::ParseManifest(ckpt::SerializeManifest(*manifest), path);
    Check(again.ok() && *again == *manifest);
  }
  const int64_t step = ckpt::ParseStepDirName(bytes);
  Check(step >= -1);
  if (step >= 0) Check(bytes == "step-" + std::to_string(step));  // one spelling per step
  return 0;
}
