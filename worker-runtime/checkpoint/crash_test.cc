// A real crash: a forked child saving large checkpoints in a loop is killed
// with SIGKILL in the middle of writing one. The directory must stay loadable
// (the newest checkpoint committed before the kill), and the leftover temp
// directory must be collected. (SIGKILL loses no page-cache data; it tests a
// process crash, not a power cut, which fsync ordering covers by design.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/checkpoint/checkpoint_testing.h"
#include "worker-runtime/checkpoint/file_io.h"

namespace ringmaster::checkpoint {
namespace {

using testing::FreshTestDir;
using testing::PatternBytes;

constexpr size_t kBlobSize = size_t{24} << 20;

std::unique_ptr<CheckpointStore> OpenStore(const std::string& dir, std::chrono::seconds stale) {
  CheckpointOptions options;
  options.dir = dir;
  options.keep_last = 2;
  options.stale_temp_age = stale;
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  EXPECT_OK(store) << store.status();
  return std::move(store).value();
}

// In the child: save steps first, first+1, ... until killed.
[[noreturn]] void SaveForever(const std::string& dir, int64_t first) {
  auto store = OpenStore(dir, std::chrono::seconds(3600));
  for (int64_t step = first;; ++step) {
    const std::vector<std::byte> model = PatternBytes(step, 0, kBlobSize), cursor = PatternBytes(step, 1, 64);
    const BlobRef blobs[] = {{"model", model}, {"cursor", cursor}};
    if (!store->Save(step, 1, blobs).ok()) _exit(3);
  }
}

// The temp directories (name -> step), except those named in `ignore`; with
// partial_only, only those holding a partly written model blob.
std::map<std::string, int64_t> TempDirs(const std::string& dir, const std::map<std::string, int64_t>& ignore,
                                        bool partial_only) {
  std::map<std::string, int64_t> out;
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (!name.starts_with(".tmp-step-") || ignore.count(name) > 0) continue;
    StatusOr<uint64_t> size = RegularFileSize(dir + "/" + name + "/model");
    if (!partial_only || (size.ok() && *size > 0 && *size < kBlobSize)) out[name] = std::stoll(name.substr(10));
  }
  return out;
}

TEST(CrashTest, SigkillMidWriteLeavesTheDirectoryLoadable) {
  const std::string dir = FreshTestDir();
  {
    auto store = OpenStore(dir, std::chrono::seconds(3600));
    const std::vector<std::byte> model = PatternBytes(1, 0, kBlobSize), cursor = PatternBytes(1, 1, 64);
    const BlobRef blobs[] = {{"model", model}, {"cursor", cursor}};
    ASSERT_OK(store->Save(1, 1, blobs));
  }
  int64_t newest = 1;
  std::map<std::string, int64_t> leftovers;  // temp dirs of earlier rounds
  for (int round = 0; round < 3; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) SaveForever(dir, newest + 1);
    // Round r lets the child commit r checkpoints, then kills it while it
    // writes the next one.
    const int64_t target = newest + 1 + round;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool caught = false;
    while (!caught && std::chrono::steady_clock::now() < deadline) {
      for (const auto& [name, step] : TempDirs(dir, leftovers, true)) caught |= step >= target;
      if (!caught) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(caught) << "the child never got to write step " << target;
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the child stopped on its own (status " << wstatus << ")";

    auto reader = OpenStore(dir, std::chrono::seconds(3600));
    StatusOr<LoadedCheckpoint> loaded = reader->LoadLatest();
    ASSERT_OK(loaded) << loaded.status();
    EXPECT_GE(loaded->manifest.step, newest + round) << "a checkpoint committed before the kill was lost";
    EXPECT_LE(loaded->manifest.step, target);
    const std::vector<std::byte> want = PatternBytes(loaded->manifest.step, 0, kBlobSize);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), loaded->blobs.at("model").data.get()));
    newest = loaded->manifest.step;
    // The kill really interrupted a save: its temp directory is still there.
    const std::map<std::string, int64_t> partial = TempDirs(dir, leftovers, false);
    EXPECT_FALSE(partial.empty()) << "no half-written save left behind";
    leftovers.insert(partial.begin(), partial.end());
  }

  // The next writer cleans up the crashed saves' temp directories.
  auto store = OpenStore(dir, std::chrono::seconds(0));
  ASSERT_OK(store->CollectGarbage());
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  ASSERT_OK(names);
  for (const std::string& name : *names) EXPECT_FALSE(name.starts_with(".")) << name;
  EXPECT_OK(store->LoadLatest());
  if (!::testing::Test::HasFailure()) {
    EXPECT_OK(RemoveTree(dir));  // 49 MB; kept when it failed, to read
  }
}

}  // namespace
}  // namespace ringmaster::checkpoint
