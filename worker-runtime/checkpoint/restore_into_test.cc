// LoadInto / LoadLatestInto: a checkpoint restored into the caller's existing memory (a built model) must
// come back byte for byte whatever the memory's alignment and the blob's size; a request that does not fit
// the checkpoint is refused before anything is written; corruption is DataLoss for a given step and a
// logged fallback to an older checkpoint for the latest.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/checkpoint/checkpoint_testing.h"

namespace ringmaster::checkpoint {
namespace {

using testing::FlipByte;
using testing::FreshTestDir;
using testing::LogCapture;
using testing::PatternBytes;

constexpr size_t kMiB = size_t{1} << 20;
constexpr std::byte kFill{0xa5};
constexpr size_t kGuard = 64;  // fill checked on both sides of each destination

std::unique_ptr<CheckpointStore> OpenStore(const std::string& dir, LogCapture* log) {
  CheckpointOptions options;
  options.dir = dir;
  options.keep_last = 10;
  if (log != nullptr) options.log = log->fn();
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  EXPECT_OK(store) << store.status();
  return store.ok() ? std::move(store).value() : nullptr;
}

// Saves `step` with blob b ("b0", "b1", ...) of sizes[b] bytes, PatternBytes(step, b, ...).
void SaveStep(CheckpointStore& store, int64_t step, const std::vector<size_t>& sizes) {
  std::vector<std::vector<std::byte>> data;
  std::vector<std::string> names;
  for (size_t b = 0; b < sizes.size(); ++b) {
    data.push_back(PatternBytes(step, static_cast<int>(b), sizes[b]));
    names.push_back("b" + std::to_string(b));
  }
  std::vector<BlobRef> refs;
  for (size_t b = 0; b < sizes.size(); ++b) refs.push_back({names[b], data[b]});
  ASSERT_OK(store.Save(step, 1, refs));
}

// Caller memory for one blob: `size` bytes at `misalign` from a 4096-aligned address, guarded by kFill on
// both sides, itself filled with kFill (touched, like a built model's parameters).
struct Destination {
  Destination(std::string blob_name, size_t size, size_t misalign) : name(std::move(blob_name)) {
    StatusOr<ByteBuffer> allocated = ByteBuffer::Allocate(4096 + misalign + size + kGuard);  // 4096-aligned
    EXPECT_OK(allocated);
    memory = std::move(allocated).value();
    std::memset(memory.data.get(), static_cast<int>(kFill), memory.size);
    start = memory.data.get() + 4096 + misalign;
    data = std::span<std::byte>(start, size);
  }
  BlobDestination ref() const { return {name, data}; }
  bool Holds(int64_t step, int blob) const {
    const std::vector<std::byte> want = PatternBytes(step, blob, data.size());
    return std::equal(want.begin(), want.end(), data.begin());
  }
  bool Untouched() const {
    return std::all_of(data.begin(), data.end(), [](std::byte b) { return b == kFill; });
  }
  bool GuardsIntact() const {
    std::byte* const end = memory.data.get() + memory.size;
    return std::all_of(memory.data.get(), start, [](std::byte b) { return b == kFill; }) &&
           std::all_of(start + data.size(), end, [](std::byte b) { return b == kFill; });
  }

  std::string name;
  ByteBuffer memory;
  std::byte* start = nullptr;
  std::span<std::byte> data;
};

// Odd sizes: below, at and above a block, above the direct-IO threshold with a partial last block, and
// more than one 8 MiB chunk with a partial last block.
const std::vector<size_t> kOddSizes = {1, 4095, 4097, kMiB + 3, 9 * kMiB + 4097, 17 * kMiB + 5};

TEST(RestoreIntoTest, BitIdenticalIntoAlignedAndUnalignedDestinationsOfOddSizes) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, nullptr);
  SaveStep(*store, 4, kOddSizes);
  SaveStep(*store, 5, kOddSizes);
  for (size_t misalign : std::initializer_list<size_t>{0, 1, 8, 512, 4095}) {
    for (bool latest : {false, true}) {
      SCOPED_TRACE("misalign " + std::to_string(misalign) + (latest ? ", LoadLatestInto" : ", LoadInto(4)"));
      std::vector<std::unique_ptr<Destination>> dests;
      std::vector<BlobDestination> refs;
      for (size_t b = 0; b < kOddSizes.size(); ++b) {
        dests.push_back(std::make_unique<Destination>("b" + std::to_string(b), kOddSizes[b], misalign));
        refs.push_back(dests.back()->ref());
      }
      StatusOr<RestoredCheckpoint> restored = latest ? store->LoadLatestInto(refs) : store->LoadInto(4, refs);
      ASSERT_OK(restored);
      const int64_t step = latest ? 5 : 4;
      EXPECT_EQ(restored->stats.step, step);
      EXPECT_EQ(restored->manifest.step, step);
      EXPECT_EQ(restored->path, dir + "/step-" + std::to_string(step));
      EXPECT_EQ(restored->stats.skipped, 0);
      size_t total = 0;
      for (size_t size : kOddSizes) total += size;
      EXPECT_EQ(restored->stats.bytes, total);
      for (size_t b = 0; b < dests.size(); ++b) {
        EXPECT_TRUE(dests[b]->Holds(step, static_cast<int>(b))) << "blob " << b << ", " << kOddSizes[b] << " bytes";
        EXPECT_TRUE(dests[b]->GuardsIntact()) << "blob " << b << ", " << kOddSizes[b] << " bytes";
      }
    }
  }
  EXPECT_OK(RemoveTree(dir));
}

TEST(RestoreIntoTest, ABlobWithoutADestinationIsSkippedUnread) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, nullptr);
  SaveStep(*store, 1, {5000, 3 * kMiB});
  FlipByte(dir + "/step-1/b1", 100);  // never read: an inference job restoring b0 does not care
  Destination b0("b0", 5000, 3);
  const BlobDestination refs[] = {b0.ref()};
  StatusOr<RestoredCheckpoint> restored = store->LoadInto(1, refs);
  ASSERT_OK(restored);
  EXPECT_TRUE(b0.Holds(1, 0));
  EXPECT_EQ(restored->stats.bytes, 5000u);
  ASSERT_EQ(restored->manifest.blobs.size(), 2u);  // the skipped one is still listed
  EXPECT_EQ(restored->manifest.blobs[1].name, "b1");
  ASSERT_OK(store->LoadLatestInto(refs));
  EXPECT_TRUE(b0.Holds(1, 0));
  EXPECT_OK(RemoveTree(dir));
}

TEST(RestoreIntoTest, ASizeMismatchIsRefusedNamingBothSizesBeforeAnythingIsWritten) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  auto store = OpenStore(dir, &log);
  SaveStep(*store, 1, {2 * kMiB + 1, 100});  // an older checkpoint the wrong destination would fit
  SaveStep(*store, 2, {2 * kMiB, 100});
  for (size_t wrong : std::initializer_list<size_t>{2 * kMiB - 1, 2 * kMiB + 1}) {
    Destination b0("b0", wrong, 0), b1("b1", 100, 1);
    const BlobDestination refs[] = {b1.ref(), b0.ref()};  // b1 first: a mismatch later still writes nothing
    for (bool latest : {false, true}) {
      SCOPED_TRACE(std::to_string(wrong) + (latest ? " bytes, LoadLatestInto" : " bytes, LoadInto(2)"));
      StatusOr<RestoredCheckpoint> restored = latest ? store->LoadLatestInto(refs) : store->LoadInto(2, refs);
      ASSERT_FALSE(restored.ok());
      EXPECT_EQ(restored.status().code(), StatusCode::kInvalidArgument) << restored.status();
      const std::string message = restored.status().message();
      EXPECT_NE(message.find("\"b0\""), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(2 * kMiB) + " bytes"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(wrong) + " bytes"), std::string::npos) << message;
      EXPECT_NE(message.find("step-2"), std::string::npos) << message;
      EXPECT_TRUE(b0.Untouched());
      EXPECT_TRUE(b1.Untouched());
    }
  }
  EXPECT_TRUE(log.lines().empty()) << ::testing::PrintToString(log.lines());  // no fallback, nothing skipped
  EXPECT_OK(RemoveTree(dir));
}

TEST(RestoreIntoTest, ADestinationWithoutABlobIsNotFoundNamingIt) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, nullptr);
  SaveStep(*store, 1, {4096, 100});
  Destination b0("b0", 4096, 0), other("optimizer", 100, 0);
  const BlobDestination refs[] = {b0.ref(), other.ref()};
  for (bool latest : {false, true}) {
    StatusOr<RestoredCheckpoint> restored = latest ? store->LoadLatestInto(refs) : store->LoadInto(1, refs);
    ASSERT_FALSE(restored.ok());
    EXPECT_EQ(restored.status().code(), StatusCode::kNotFound) << restored.status();
    EXPECT_NE(restored.status().message().find("no blob \"optimizer\""), std::string::npos) << restored.status();
    EXPECT_TRUE(b0.Untouched());
  }
  EXPECT_OK(RemoveTree(dir));
}

TEST(RestoreIntoTest, InvalidRequests) {
  const std::string dir = FreshTestDir();
  auto store = OpenStore(dir, nullptr);
  SaveStep(*store, 1, {4096});
  Destination b0("b0", 4096, 0);
  const BlobDestination twice[] = {b0.ref(), b0.ref()};
  StatusOr<RestoredCheckpoint> restored = store->LoadInto(1, twice);
  EXPECT_EQ(restored.status().code(), StatusCode::kInvalidArgument) << restored.status();
  EXPECT_NE(restored.status().message().find("\"b0\" given twice"), std::string::npos) << restored.status();
  EXPECT_EQ(store->LoadLatestInto(twice).status().code(), StatusCode::kInvalidArgument);
  const BlobDestination once[] = {b0.ref()};
  EXPECT_EQ(store->LoadInto(7, once).status().code(), StatusCode::kNotFound);  // no such step
  EXPECT_TRUE(b0.Untouched());
  EXPECT_OK(RemoveTree(dir));
}

TEST(RestoreIntoTest, CorruptNewestFallsBackToAnOlderOneForTheLatest) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  auto store = OpenStore(dir, &log);
  const std::vector<size_t> sizes = {9 * kMiB + 4097, 300};
  for (int64_t step = 1; step <= 3; ++step) SaveStep(*store, step, sizes);
  FlipByte(dir + "/step-3/b0", 8 * kMiB + 7);  // in the second chunk: the first one is already written
  ASSERT_EQ(::truncate((dir + "/step-2/b1").c_str(), 299), 0);
  Destination b0("b0", sizes[0], 16), b1("b1", sizes[1], 0);
  const BlobDestination refs[] = {b0.ref(), b1.ref()};
  StatusOr<RestoredCheckpoint> restored = store->LoadLatestInto(refs);
  ASSERT_OK(restored);
  EXPECT_EQ(restored->stats.step, 1);
  EXPECT_EQ(restored->stats.skipped, 2);
  EXPECT_TRUE(b0.Holds(1, 0));
  EXPECT_TRUE(b1.Holds(1, 1));
  EXPECT_TRUE(log.Contains({"skipping checkpoint step-3", "step-3/b0", "CRC32C", "DataLoss"}))
      << ::testing::PrintToString(log.lines());
  EXPECT_TRUE(log.Contains({"skipping checkpoint step-2", "step-2/b1", "truncated"}))
      << ::testing::PrintToString(log.lines());

  // With every checkpoint corrupt: NotFound listing each reason.
  FlipByte(dir + "/step-1/b1", 0);
  restored = store->LoadLatestInto(refs);
  EXPECT_EQ(restored.status().code(), StatusCode::kNotFound) << restored.status();
  EXPECT_NE(restored.status().message().find("step-1/b1"), std::string::npos) << restored.status();
  EXPECT_NE(restored.status().message().find("step-3/b0"), std::string::npos) << restored.status();
  EXPECT_OK(RemoveTree(dir));
}

TEST(RestoreIntoTest, ACorruptGivenStepIsDataLossNamingTheFile) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  auto store = OpenStore(dir, &log);
  const std::vector<size_t> sizes = {9 * kMiB + 4097, 300};
  SaveStep(*store, 1, sizes);
  SaveStep(*store, 2, sizes);
  FlipByte(dir + "/step-2/b0", 9 * kMiB + 4000);  // in the partial last block
  Destination b0("b0", sizes[0], 0), b1("b1", sizes[1], 1);
  const BlobDestination refs[] = {b0.ref(), b1.ref()};
  StatusOr<RestoredCheckpoint> restored = store->LoadInto(2, refs);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), StatusCode::kDataLoss) << restored.status();
  EXPECT_NE(restored.status().message().find(dir + "/step-2/b0"), std::string::npos) << restored.status();
  EXPECT_NE(restored.status().message().find("CRC32C"), std::string::npos) << restored.status();
  // A given step never falls back; the older one is still there to be asked for.
  EXPECT_TRUE(log.lines().empty()) << ::testing::PrintToString(log.lines());
  ASSERT_OK(store->LoadInto(1, refs));
  EXPECT_TRUE(b0.Holds(1, 0));
  EXPECT_TRUE(b1.Holds(1, 1));
  EXPECT_OK(RemoveTree(dir));
}

}  // namespace
}  // namespace ringmaster::checkpoint
