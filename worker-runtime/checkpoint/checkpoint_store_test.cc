#include "worker-runtime/checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_testing.h"

namespace ringmaster::checkpoint {
namespace {

using testing::FreshTestDir;
using testing::LogCapture;
using testing::PatternBytes;

std::unique_ptr<CheckpointStore> OpenStore(const std::string& dir, int keep, LogCapture* log,
                                           std::chrono::seconds stale = std::chrono::seconds(600)) {
  CheckpointOptions options;
  options.dir = dir;
  options.keep_last = keep;
  options.stale_temp_age = stale;
  if (log != nullptr) options.log = log->fn();
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  EXPECT_OK(store) << store.status();
  return store.ok() ? std::move(store).value() : nullptr;
}

// Saves step with a "model" (size) and a "cursor" blob derived from step.
StatusOr<SaveResult> SaveStep(CheckpointStore& store, int64_t step, size_t size = 4096) {
  const std::vector<std::byte> model = PatternBytes(step, 0, size);
  const std::vector<std::byte> cursor = PatternBytes(step, 1, 17);
  const BlobRef blobs[] = {{"model", model}, {"cursor", cursor}};
  return store.Save(step, 4, blobs);
}

// True when every blob of `loaded` has the contents SaveStep wrote for its step.
::testing::AssertionResult MatchesStep(const LoadedCheckpoint& loaded, size_t size = 4096) {
  const int64_t step = loaded.manifest.step;
  const auto model = loaded.blobs.find("model");
  const auto cursor = loaded.blobs.find("cursor");
  if (model == loaded.blobs.end() || cursor == loaded.blobs.end()) return ::testing::AssertionFailure() << "blobs";
  const std::vector<std::byte> want_model = PatternBytes(step, 0, size), want_cursor = PatternBytes(step, 1, 17);
  auto same = [](const ByteBuffer& b, const std::vector<std::byte>& v) {
    return b.size == v.size() && std::equal(v.begin(), v.end(), b.data.get());
  };
  if (!same(model->second, want_model) || !same(cursor->second, want_cursor)) {
    return ::testing::AssertionFailure() << "contents differ from step " << step;
  }
  return ::testing::AssertionSuccess();
}

TEST(CheckpointStoreTest, RoundTrip) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, 3, nullptr);
  const std::vector<std::byte> model = PatternBytes(7, 0, 100000);
  const std::vector<std::byte> empty;
  const BlobRef blobs[] = {{"model", model}, {"optimizer", empty}};
  StatusOr<SaveResult> saved = store->Save(7, 3, blobs);
  ASSERT_OK(saved) << saved.status();
  EXPECT_EQ(saved->bytes, 100000u);
  EXPECT_EQ(saved->path, dir + "/step-7");
  EXPECT_GT(saved->seconds, 0);

  StatusOr<LoadedCheckpoint> loaded = store->LoadLatest();
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->manifest.step, 7);
  EXPECT_EQ(loaded->manifest.world_size, 3u);
  EXPECT_GT(loaded->manifest.created_unix_ms, 1600000000000);
  EXPECT_EQ(loaded->stats.bytes, 100000u);
  EXPECT_EQ(loaded->stats.skipped, 0);
  ASSERT_EQ(loaded->blobs.size(), 2u);
  const ByteBuffer& m = loaded->blobs.at("model");
  ASSERT_EQ(m.size, model.size());
  EXPECT_TRUE(std::equal(model.begin(), model.end(), m.data.get()));
  EXPECT_EQ(loaded->blobs.at("optimizer").size, 0u);
  // Nothing but the step directory is left behind.
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"step-7"});
}

TEST(CheckpointStoreTest, EmptyDirectoryIsNotFound) {
  auto store = OpenStore(FreshTestDir(), 3, nullptr);
  EXPECT_EQ(store->LoadLatest().status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Load(3).status().code(), StatusCode::kNotFound);
}

TEST(CheckpointStoreTest, KeepsTheLastK) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  auto store = OpenStore(dir, 2, &log);
  for (int64_t step = 1; step <= 5; ++step) ASSERT_OK(SaveStep(*store, step));
  StatusOr<std::vector<int64_t>> steps = store->ListSteps();
  ASSERT_OK(steps);
  EXPECT_EQ(*steps, (std::vector<int64_t>{5, 4}));
  EXPECT_TRUE(log.Contains({"deleting checkpoint step-3"}));
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  ASSERT_OK(names);
  EXPECT_EQ(names->size(), 2u) << "no trash or temp directories left";
  StatusOr<LoadedCheckpoint> loaded = store->LoadLatest();
  ASSERT_OK(loaded);
  EXPECT_EQ(loaded->manifest.step, 5);
  EXPECT_TRUE(MatchesStep(*loaded));
}

TEST(CheckpointStoreTest, RetentionCountsOnlyCompleteCheckpoints) {
  // keep_last=1 and the newest step directory is damaged: the older good one
  // must survive, or nothing would be loadable.
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, 1, nullptr);
  ASSERT_OK(SaveStep(*store, 1));
  ASSERT_EQ(::mkdir((dir + "/step-9").c_str(), 0755), 0);  // no manifest
  ASSERT_OK(store->CollectGarbage());
  StatusOr<LoadedCheckpoint> loaded = store->LoadLatest();
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->manifest.step, 1);
}

TEST(CheckpointStoreTest, ResavingAStepReplacesItAtomically) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, 3, nullptr);
  ASSERT_OK(SaveStep(*store, 4, 100));
  ASSERT_OK(SaveStep(*store, 4, 300)) << "re-save after a rollback";
  StatusOr<LoadedCheckpoint> loaded = store->Load(4);
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_TRUE(MatchesStep(*loaded, 300));
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"step-4"});
}

TEST(CheckpointStoreTest, StaleTempDirectoriesAreCollected) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  {
    auto store = OpenStore(dir, 3, &log);
    ASSERT_OK(SaveStep(*store, 1));
  }
  ASSERT_EQ(::mkdir((dir + "/.tmp-step-2-999-1-abc").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/.trash-step-0-1-1-abc").c_str(), 0755), 0);
  {
    auto patient = OpenStore(dir, 3, &log, std::chrono::seconds(3600));
    ASSERT_OK(patient->CollectGarbage());
    StatusOr<std::vector<std::string>> names = ListDirectory(dir);
    ASSERT_OK(names);
    EXPECT_EQ(names->size(), 2u) << "a young temp dir may belong to a live writer: kept; trash removed";
  }
  auto store = OpenStore(dir, 3, &log, std::chrono::seconds(0));
  ASSERT_OK(store->CollectGarbage());
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"step-1"});
  EXPECT_TRUE(log.Contains({".tmp-step-2-999-1-abc", "crashed or interrupted"}));
}

TEST(CheckpointStoreTest, InvalidArguments) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, 3, nullptr);
  const std::vector<std::byte> bytes(3);
  const BlobRef bad_name[] = {{"../x", bytes}};
  const BlobRef dup[] = {{"a", bytes}, {"a", bytes}};
  const BlobRef ok[] = {{"a", bytes}};
  EXPECT_EQ(store->Save(1, 1, bad_name).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Save(1, 1, dup).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Save(-1, 1, ok).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Save(1, 0, ok).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointStore::Open({"", 3, std::chrono::seconds(1), nullptr}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointStore::Open({dir, 0, std::chrono::seconds(1), nullptr}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStepDirName("step-12"), 12);
  EXPECT_EQ(ParseStepDirName("step-012"), -1);
  EXPECT_EQ(ParseStepDirName("step-"), -1);
  EXPECT_EQ(ParseStepDirName("step-1x"), -1);
}

TEST(CheckpointStoreTest, DiskErrorsAreReportedAndLeaveNothingBehind) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, 3, nullptr);
  ASSERT_OK(RemoveTree(dir));  // the shared path went away
  StatusOr<SaveResult> saved = SaveStep(*store, 1);
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), StatusCode::kNotFound) << saved.status();
  EXPECT_NE(saved.status().message().find("step 1"), std::string::npos) << saved.status();
}

TEST(CheckpointStoreTest, ConcurrentReadersDuringWrites) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, 2, nullptr);
  ASSERT_OK(SaveStep(*store, 0, 64 << 10));
  std::atomic<bool> done{false};
  std::atomic<int> loads{0};
  std::atomic<bool> failed{false};
  auto reader = [&] {
    // A separate store object, as another process would have.
    auto mine = OpenStore(dir, 2, nullptr);
    int64_t last = -1;
    while (!done.load()) {
      StatusOr<LoadedCheckpoint> loaded = mine->LoadLatest();
      if (!loaded.ok()) {
        ADD_FAILURE() << loaded.status();
        failed = true;
        return;
      }
      EXPECT_TRUE(MatchesStep(*loaded, 64 << 10));
      EXPECT_GE(loaded->manifest.step, last) << "the newest complete checkpoint never goes back";
      last = loaded->manifest.step;
      ++loads;
    }
  };
  std::thread r1(reader), r2(reader);
  for (int64_t step = 1; step <= 30; ++step) EXPECT_OK(SaveStep(*store, step, 64 << 10));
  while (loads.load() < 4 && !failed.load()) std::this_thread::yield();
  done = true;
  r1.join();
  r2.join();
}

}  // namespace
}  // namespace ringmaster::checkpoint
