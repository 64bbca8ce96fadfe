#include "worker-runtime/checkpoint/async_checkpoint_writer.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_testing.h"

namespace ringmaster::checkpoint {
namespace {

using testing::FreshTestDir;
using testing::PatternBytes;

std::unique_ptr<CheckpointStore> OpenStore(const std::string& dir) {
  CheckpointOptions options;
  options.dir = dir;
  options.keep_last = 2;
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  EXPECT_OK(store) << store.status();
  return std::move(store).value();
}

TEST(AsyncCheckpointWriterTest, OverlappingSavesNewestWins) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir);
  AsyncCheckpointWriter writer(store.get());
  constexpr int kSaves = 12;
  constexpr size_t kSize = 2 << 20;
  std::vector<std::byte> model;
  for (int64_t step = 1; step <= kSaves; ++step) {
    model = PatternBytes(step, 0, kSize);  // the "training" buffer, rewritten every step
    const BlobRef blobs[] = {{"model", model}};
    ASSERT_OK(writer.Save(step, 2, blobs));
    std::fill(model.begin(), model.end(), std::byte{0xEE});  // training goes on changing it
  }
  ASSERT_OK(writer.Wait()) << writer.last_status();
  const AsyncCheckpointWriter::Stats stats = writer.stats();
  EXPECT_EQ(stats.accepted, static_cast<uint64_t>(kSaves));
  EXPECT_EQ(stats.committed + stats.superseded, static_cast<uint64_t>(kSaves));
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_GE(stats.committed, 1u);
  ASSERT_TRUE(writer.last_result().has_value());
  EXPECT_EQ(writer.last_result()->step, kSaves) << "the newest snapshot is always persisted";
  EXPECT_EQ(writer.last_result()->bytes, kSize);

  StatusOr<LoadedCheckpoint> loaded = store->LoadLatest();
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->manifest.step, kSaves);
  const std::vector<std::byte> want = PatternBytes(kSaves, 0, kSize);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), loaded->blobs.at("model").data.get()))
      << "the snapshot was taken at Save(), not when written";
}

TEST(AsyncCheckpointWriterTest, DestructorPersistsWhatWasAccepted) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir);
  {
    AsyncCheckpointWriter writer(store.get());
    for (int64_t step = 1; step <= 3; ++step) {
      const std::vector<std::byte> model = PatternBytes(step, 0, 1 << 20);
      const BlobRef blobs[] = {{"model", model}};
      ASSERT_OK(writer.Save(step, 1, blobs));
    }
  }
  StatusOr<LoadedCheckpoint> loaded = store->LoadLatest();
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->manifest.step, 3);
}

TEST(AsyncCheckpointWriterTest, WaitWithNothingToDoIsOk) {
  auto store = OpenStore(FreshTestDir());
  AsyncCheckpointWriter writer(store.get());
  EXPECT_OK(writer.Wait());
  EXPECT_FALSE(writer.last_result().has_value());
}

TEST(AsyncCheckpointWriterTest, InvalidInputIsRejectedAtOnce) {
  auto store = OpenStore(FreshTestDir());
  AsyncCheckpointWriter writer(store.get());
  const std::vector<std::byte> bytes(4);
  const BlobRef bad[] = {{"no/slash", bytes}};
  EXPECT_EQ(writer.Save(1, 1, bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer.stats().accepted, 0u);
}

TEST(AsyncCheckpointWriterTest, DiskErrorsSurfaceThroughWait) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir);
  AsyncCheckpointWriter writer(store.get());
  ASSERT_OK(RemoveTree(dir));
  const std::vector<std::byte> bytes(4);
  const BlobRef blobs[] = {{"model", bytes}};
  ASSERT_OK(writer.Save(1, 1, blobs));
  const Status status = writer.Wait();
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status;
  EXPECT_EQ(writer.stats().failed, 1u);
  EXPECT_FALSE(writer.last_result().has_value());
}

}  // namespace
}  // namespace ringmaster::checkpoint
