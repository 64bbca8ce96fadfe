#include "worker-runtime/checkpoint/checkpoint_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <set>

#include "worker-runtime/checkpoint/crc32c.h"

namespace ringmaster::checkpoint {
namespace {

constexpr std::string_view kTmpPrefix = ".tmp-step-";
constexpr std::string_view kTrashPrefix = ".trash-";
constexpr uint64_t kMaxManifestBytes = uint64_t{16} << 20;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

int64_t ParseStepDirName(std::string_view name) {
  constexpr std::string_view kPrefix = "step-";
  if (!name.starts_with(kPrefix)) return -1;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 18 || (digits.size() > 1 && digits[0] == '0')) return -1;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

StatusOr<std::unique_ptr<CheckpointStore>> CheckpointStore::Open(CheckpointOptions options) {
  if (options.dir.empty()) return InvalidArgumentError("checkpoint store: dir is empty");
  if (options.keep_last < 1) return InvalidArgumentError("checkpoint store: keep_last must be at least 1");
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  RINGMASTER_RETURN_IF_ERROR(MakeDirectories(options.dir));
  return std::unique_ptr<CheckpointStore>(new CheckpointStore(std::move(options)));
}

void CheckpointStore::Log(const std::string& line) const { ::ringmaster::Log(options_.log, LogLevel::kInfo, line); }

std::string CheckpointStore::StepPath(int64_t step) const { return options_.dir + "/step-" + std::to_string(step); }

std::string CheckpointStore::UniqueSuffix() {
  // pid + a per-store counter + clock bits: unique among this host's writers,
  // and unlikely to collide across hosts sharing the path (mkdir would refuse).
  char buf[64];
  const auto nanos = static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::snprintf(buf, sizeof buf, "%d-%llu-%08llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(++unique_counter_), nanos & 0xffffffffULL);
  return buf;
}

Status ValidateSave(int64_t step, uint32_t world_size, std::span<const BlobRef> blobs) {
  if (step < 0) return InvalidArgumentError("checkpoint save: step " + std::to_string(step) + " is negative");
  if (world_size == 0) return InvalidArgumentError("checkpoint save: world_size must be at least 1");
  std::set<std::string_view> names;
  for (const BlobRef& blob : blobs) {
    RINGMASTER_RETURN_IF_ERROR(ValidateBlobName(blob.name).WithContext("checkpoint save"));
    if (!names.insert(blob.name).second) {
      return InvalidArgumentError("checkpoint save: blob \"" + std::string(blob.name) + "\" given twice");
    }
  }
  return Status::Ok();
}

StatusOr<SaveResult> CheckpointStore::Save(int64_t step, uint32_t world_size, std::span<const BlobRef> blobs) {
  RINGMASTER_RETURN_IF_ERROR(ValidateSave(step, world_size, blobs));

  std::lock_guard<std::mutex> lock(write_mu_);
  const auto start = std::chrono::steady_clock::now();
  const std::string tmp = options_.dir + "/" + std::string(kTmpPrefix) + std::to_string(step) + "-" + UniqueSuffix();
  if (::mkdir(tmp.c_str(), 0755) != 0) {
    return ErrnoStatus(errno, "create directory", tmp).WithContext("checkpoint save of step " + std::to_string(step));
  }

  Manifest manifest;
  manifest.step = step;
  manifest.world_size = world_size;
  manifest.created_unix_ms = NowUnixMs();
  SaveResult result;
  result.step = step;
  auto write_all = [&]() -> Status {
    for (const BlobRef& blob : blobs) {
      BlobInfo info;
      info.name = std::string(blob.name);
      info.size = blob.data.size();
      RINGMASTER_RETURN_IF_ERROR(WriteFileDurably(tmp + "/" + info.name, blob.data, &info.crc32c));
      result.bytes += info.size;
      manifest.blobs.push_back(std::move(info));
    }
    const std::string text = SerializeManifest(manifest);
    RINGMASTER_RETURN_IF_ERROR(WriteFileDurably(tmp + "/" + std::string(kManifestFileName),
                                                std::as_bytes(std::span<const char>(text.data(), text.size())),
                                                nullptr));
    RINGMASTER_RETURN_IF_ERROR(SyncDirectory(tmp));
    return Commit(tmp, step);
  };
  if (Status s = write_all(); !s.ok()) {
    (void)RemoveTree(tmp);  // best effort; a leftover is collected later as stale
    return s.WithContext("checkpoint save of step " + std::to_string(step));
  }
  result.path = StepPath(step);

  StatusOr<int> removed = CollectGarbageLocked();
  if (removed.ok()) {
    result.removed_checkpoints = *removed;
  } else {
    Log("checkpoint retention after step " + std::to_string(step) + " failed: " + removed.status().ToString());
  }
  result.seconds = SecondsSince(start);
  return result;
}

Status CheckpointStore::Commit(const std::string& tmp, int64_t step) {
  const std::string target = StepPath(step);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    if (errno != ENOTEMPTY && errno != EEXIST) return ErrnoStatus(errno, "rename " + tmp + " to", target);
    // step-<N> exists: swap atomically so that it never disappears, then
    // delete the old contents (now under the temp name).
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      return ErrnoStatus(errno, "replace (RENAME_EXCHANGE) existing", target);
    }
    RINGMASTER_RETURN_IF_ERROR(SyncDirectory(options_.dir));
    Log("checkpoint step-" + std::to_string(step) + " replaced an existing checkpoint of the same step");
    (void)RemoveTree(tmp);
    return Status::Ok();
  }
  return SyncDirectory(options_.dir);
}

StatusOr<std::vector<int64_t>> CheckpointStore::ListSteps() const {
  RINGMASTER_ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDirectory(options_.dir));
  std::vector<int64_t> steps;
  for (const std::string& name : names) {
    const int64_t step = ParseStepDirName(name);
    if (step >= 0) steps.push_back(step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

StatusOr<RestoredCheckpoint> CheckpointStore::LoadStep(int64_t step, const PlaceFn& place,
                                                       bool* placement_failed) const {
  const auto start = std::chrono::steady_clock::now();
  *placement_failed = false;
  const std::string path = StepPath(step);
  // A missing file is NotFound when the whole step directory is gone (deleted
  // by retention while we read), DataLoss when the checkpoint is incomplete.
  auto missing = [&path](const Status& status, const std::string& what) {
    if (!Exists(path)) return NotFoundError(path + ": no such checkpoint (removed?)");
    return DataLossError(path + ": " + what + " missing (incomplete checkpoint): " + status.message());
  };

  const std::string manifest_path = path + "/" + std::string(kManifestFileName);
  StatusOr<ByteBuffer> manifest_bytes = ReadRegularFile(manifest_path, -1, kMaxManifestBytes);
  if (!manifest_bytes.ok()) {
    if (manifest_bytes.status().code() == StatusCode::kNotFound) return missing(manifest_bytes.status(), "manifest");
    return manifest_bytes.status();
  }
  const auto* text = reinterpret_cast<const char*>(manifest_bytes->data.get());
  RINGMASTER_ASSIGN_OR_RETURN(Manifest manifest,
                              ParseManifest(std::string_view(text, manifest_bytes->size), manifest_path));
  if (manifest.step != step) {
    return DataLossError(manifest_path + ": says step " + std::to_string(manifest.step) + " but lies in step-" +
                         std::to_string(step));
  }

  StatusOr<Placement> placement = place(manifest, path);
  if (!placement.ok()) {
    *placement_failed = true;
    return placement.status();
  }
  RestoredCheckpoint restored;
  for (size_t i = 0; i < manifest.blobs.size(); ++i) {
    const BlobInfo& blob = manifest.blobs[i];
    if (!(*placement)[i].has_value()) continue;
    const std::span<std::byte> dest = *(*placement)[i];
    const std::string blob_path = path + "/" + blob.name;
    uint32_t crc = 0;
    if (Status read = ReadRegularFileInto(blob_path, dest, &crc); !read.ok()) {
      if (read.code() == StatusCode::kNotFound) return missing(read, "blob \"" + blob.name + "\"");
      return read;
    }
    if (crc != blob.crc32c) {
      char buf[96];
      std::snprintf(buf, sizeof buf, ": CRC32C %08x, manifest says %08x (corrupt)", crc, blob.crc32c);
      return DataLossError(blob_path + buf);
    }
    restored.stats.bytes += dest.size();
  }
  restored.manifest = std::move(manifest);
  restored.path = path;
  restored.stats.step = step;
  restored.stats.seconds = SecondsSince(start);
  return restored;
}

StatusOr<RestoredCheckpoint> CheckpointStore::LoadNewest(const PlaceFn& place) const {
  const auto start = std::chrono::steady_clock::now();
  std::string reasons;
  int skipped = 0;
  // A second pass only when a candidate vanished under us (retention by a
  // concurrent writer): the listing is stale, newer checkpoints exist.
  for (int pass = 0; pass < 3; ++pass) {
    RINGMASTER_ASSIGN_OR_RETURN(const std::vector<int64_t> steps, ListSteps());
    bool vanished = false;
    for (int64_t step : steps) {
      bool placement_failed = false;
      StatusOr<RestoredCheckpoint> loaded = LoadStep(step, place, &placement_failed);
      if (loaded.ok()) {
        loaded->stats.skipped = skipped;
        loaded->stats.seconds = SecondsSince(start);
        return loaded;
      }
      if (placement_failed) return loaded.status();  // an older checkpoint would not fit either
      ++skipped;
      vanished |= loaded.status().code() == StatusCode::kNotFound;
      const std::string line = "skipping checkpoint step-" + std::to_string(step) + ": " + loaded.status().ToString();
      Log(line);
      reasons += "; " + line;
    }
    if (!vanished) break;
  }
  return NotFoundError("no complete checkpoint in " + options_.dir + reasons);
}

// Load/LoadLatest: every blob into a fresh aligned buffer of `blobs` (emptied first: a skipped checkpoint
// may have filled it).
CheckpointStore::PlaceFn CheckpointStore::PlaceInNewBuffers(std::map<std::string, ByteBuffer, std::less<>>& blobs) {
  return [&blobs](const Manifest& manifest, const std::string& path) -> StatusOr<Placement> {
    blobs.clear();
    Placement placement;
    for (const BlobInfo& blob : manifest.blobs) {
      StatusOr<ByteBuffer> buffer = ByteBuffer::Allocate(blob.size);
      if (!buffer.ok()) return buffer.status().WithContext("loading " + path + "/" + blob.name);
      const std::span<std::byte> span(buffer->data.get(), buffer->size);
      blobs.insert_or_assign(blob.name, std::move(buffer).value());
      placement.push_back(span);
    }
    return placement;
  };
}

namespace {

LoadedCheckpoint WithBlobs(RestoredCheckpoint restored, std::map<std::string, ByteBuffer, std::less<>> blobs) {
  LoadedCheckpoint loaded;
  loaded.manifest = std::move(restored.manifest);
  loaded.blobs = std::move(blobs);
  loaded.path = std::move(restored.path);
  loaded.stats = restored.stats;
  return loaded;
}

}  // namespace

// LoadInto/LoadLatestInto: each blob into the destination of its name, checked against the manifest before
// anything is read.
CheckpointStore::PlaceFn CheckpointStore::PlaceInDestinations(std::span<const BlobDestination> destinations) {
  return [destinations](const Manifest& manifest, const std::string& path) -> StatusOr<Placement> {
    Placement placement(manifest.blobs.size());
    std::vector<bool> placed(destinations.size(), false);
    for (size_t i = 0; i < manifest.blobs.size(); ++i) {
      const BlobInfo& blob = manifest.blobs[i];
      for (size_t d = 0; d < destinations.size(); ++d) {
        if (destinations[d].name != blob.name) continue;
        if (destinations[d].data.size() != blob.size) {
          return InvalidArgumentError("restoring " + path + ": blob \"" + blob.name + "\" is " +
                                      std::to_string(blob.size) + " bytes, its destination " +
                                      std::to_string(destinations[d].data.size()) + " bytes");
        }
        placement[i] = destinations[d].data;
        placed[d] = true;
      }
    }
    for (size_t d = 0; d < destinations.size(); ++d) {
      if (!placed[d]) {
        return NotFoundError("restoring " + path + ": no blob \"" + std::string(destinations[d].name) +
                             "\" in the checkpoint (it has " + std::to_string(manifest.blobs.size()) + " blobs)");
      }
    }
    return placement;
  };
}

namespace {

Status ValidateDestinations(std::span<const BlobDestination> destinations) {
  std::set<std::string_view> names;
  for (const BlobDestination& d : destinations) {
    if (!names.insert(d.name).second) {
      return InvalidArgumentError("checkpoint restore: destination \"" + std::string(d.name) + "\" given twice");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<LoadedCheckpoint> CheckpointStore::Load(int64_t step) const {
  std::map<std::string, ByteBuffer, std::less<>> blobs;
  bool placement_failed = false;
  RINGMASTER_ASSIGN_OR_RETURN(RestoredCheckpoint restored, LoadStep(step, PlaceInNewBuffers(blobs), &placement_failed));
  return WithBlobs(std::move(restored), std::move(blobs));
}

StatusOr<LoadedCheckpoint> CheckpointStore::LoadLatest() const {
  std::map<std::string, ByteBuffer, std::less<>> blobs;
  RINGMASTER_ASSIGN_OR_RETURN(RestoredCheckpoint restored, LoadNewest(PlaceInNewBuffers(blobs)));
  return WithBlobs(std::move(restored), std::move(blobs));
}

StatusOr<RestoredCheckpoint> CheckpointStore::LoadInto(int64_t step,
                                                       std::span<const BlobDestination> destinations) const {
  RINGMASTER_RETURN_IF_ERROR(ValidateDestinations(destinations));
  bool placement_failed = false;
  return LoadStep(step, PlaceInDestinations(destinations), &placement_failed);
}

StatusOr<RestoredCheckpoint> CheckpointStore::LoadLatestInto(std::span<const BlobDestination> destinations) const {
  RINGMASTER_RETURN_IF_ERROR(ValidateDestinations(destinations));
  return LoadNewest(PlaceInDestinations(destinations));
}

Status CheckpointStore::CheckComplete(int64_t step) const {
  const std::string path = StepPath(step);
  const std::string manifest_path = path + "/" + std::string(kManifestFileName);
  RINGMASTER_ASSIGN_OR_RETURN(const ByteBuffer bytes, ReadRegularFile(manifest_path, -1, kMaxManifestBytes));
  RINGMASTER_ASSIGN_OR_RETURN(
      const Manifest manifest,
      ParseManifest(std::string_view(reinterpret_cast<const char*>(bytes.data.get()), bytes.size), manifest_path));
  for (const BlobInfo& blob : manifest.blobs) {
    RINGMASTER_ASSIGN_OR_RETURN(const uint64_t size, RegularFileSize(path + "/" + blob.name));
    if (size != blob.size) return DataLossError(path + "/" + blob.name + ": size differs from the manifest");
  }
  return Status::Ok();
}

StatusOr<int> CheckpointStore::CollectGarbage() {
  std::lock_guard<std::mutex> lock(write_mu_);
  return CollectGarbageLocked();
}

StatusOr<int> CheckpointStore::CollectGarbageLocked() {
  RINGMASTER_ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDirectory(options_.dir));
  const std::time_t now = std::time(nullptr);
  for (const std::string& name : names) {
    const std::string path = options_.dir + "/" + name;
    if (name.starts_with(kTrashPrefix)) {
      Log("removing " + path + " (an interrupted deletion)");
      (void)RemoveTree(path);
    } else if (name.starts_with(kTmpPrefix)) {
      StatusOr<std::time_t> mtime = NewestMtime(path);
      if (!mtime.ok()) continue;  // removed meanwhile
      const auto idle = static_cast<int64_t>(now - *mtime);
      if (idle >= options_.stale_temp_age.count()) {
        Log("removing " + path + ", an unfinished save idle for " + std::to_string(idle) +
            " s (left by a crashed or interrupted writer)");
        (void)RemoveTree(path);
      }
    }
  }

  RINGMASTER_ASSIGN_OR_RETURN(const std::vector<int64_t> steps, ListSteps());
  int complete = 0, removed = 0;
  for (int64_t step : steps) {
    if (complete < options_.keep_last) {
      if (CheckComplete(step).ok()) ++complete;
      continue;
    }
    // Older than the newest keep_last complete checkpoints: vanish first
    // (atomic rename), then delete at leisure.
    const std::string trash =
        options_.dir + "/" + std::string(kTrashPrefix) + "step-" + std::to_string(step) + "-" + UniqueSuffix();
    if (::rename(StepPath(step).c_str(), trash.c_str()) != 0) {
      Log("retention: cannot move " + StepPath(step) + " aside: " + ErrnoStatus(errno, "rename", trash).message());
      continue;
    }
    ++removed;
    Log("retention: deleting checkpoint step-" + std::to_string(step) + " (keeping the newest " +
        std::to_string(options_.keep_last) + ")");
    RINGMASTER_RETURN_IF_ERROR(SyncDirectory(options_.dir));
    (void)RemoveTree(trash);
  }
  return removed;
}

}  // namespace ringmaster::checkpoint
