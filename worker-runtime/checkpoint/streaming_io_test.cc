// Large files take the direct-IO path (streaming_io.h): every size around its block and chunk boundaries,
// from aligned and unaligned memory, must come back byte for byte with the same CRC32C; a file shorter than
// expected is DataLoss; damage inside a large blob is caught by the store like any other.
#include "worker-runtime/checkpoint/streaming_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/checkpoint/checkpoint_testing.h"
#include "worker-runtime/checkpoint/crc32c.h"
#include "worker-runtime/checkpoint/file_io.h"

namespace ringmaster::checkpoint {
namespace {

using testing::FlipByte;
using testing::FreshTestDir;
using testing::LogCapture;
using testing::PatternBytes;

constexpr size_t kMiB = size_t{1} << 20;

TEST(StreamingIoTest, RoundTripsAtEveryBoundaryFromAlignedAndUnalignedMemory) {
  const std::string dir = FreshTestDir();
  ASSERT_OK(MakeDirectories(dir));
  const std::vector<std::byte> pattern = PatternBytes(7, 0, 17 * kMiB + 4096 + 1);
  int n = 0;
  for (size_t size : std::initializer_list<size_t>{0, 1, 4095, kMiB - 1, kMiB, kMiB + 1, 8 * kMiB, 8 * kMiB + 4097,
                                                   16 * kMiB, 17 * kMiB + 5}) {
    for (size_t misalign : std::initializer_list<size_t>{0, 1, 512}) {
      StatusOr<ByteBuffer> source = ByteBuffer::Allocate(size + misalign);
      ASSERT_OK(source);
      std::byte* start = source->data.get() + misalign;
      if (size > 0) std::memcpy(start, pattern.data(), size);
      const std::string path = dir + "/blob" + std::to_string(n++);
      uint32_t written_crc = 0, read_crc = 1;
      ASSERT_OK(WriteFileDurably(path, std::span<const std::byte>(start, size), &written_crc));
      StatusOr<ByteBuffer> read = ReadRegularFile(path, static_cast<int64_t>(size), 0, &read_crc);
      ASSERT_OK(read) << "size " << size;
      EXPECT_EQ(read->size, size);
      EXPECT_TRUE(size == 0 || std::memcmp(read->data.get(), pattern.data(), size) == 0) << "size " << size;
      EXPECT_EQ(written_crc, Crc32c(pattern.data(), size)) << "size " << size << " misalign " << misalign;
      EXPECT_EQ(read_crc, written_crc) << "size " << size << " misalign " << misalign;
      ASSERT_EQ(::unlink(path.c_str()), 0);
    }
  }
  EXPECT_OK(RemoveTree(dir));
}

// Caller-owned memory (ReadRegularFileInto): aligned memory is read into directly except for a partial last
// block, unaligned memory through the bounce buffer; both byte for byte, with the CRC of what landed, and
// nothing written outside the destination.
TEST(StreamingIoTest, ReadsIntoCallerMemoryOfAnyAlignmentAtEveryBoundary) {
  const std::string dir = FreshTestDir();
  ASSERT_OK(MakeDirectories(dir));
  const std::vector<std::byte> pattern = PatternBytes(9, 0, 17 * kMiB + 4096 + 1);
  constexpr size_t kGuard = 4096;
  int n = 0;
  for (size_t size : std::initializer_list<size_t>{0, 1, 4095, kMiB - 1, kMiB, kMiB + 1, 4 * kMiB + 1, 8 * kMiB,
                                                   8 * kMiB + 4097, 16 * kMiB, 17 * kMiB + 5}) {
    const std::string path = dir + "/blob" + std::to_string(n++);
    uint32_t written_crc = 0;
    ASSERT_OK(WriteFileDurably(path, std::span<const std::byte>(pattern.data(), size), &written_crc));
    for (size_t misalign : std::initializer_list<size_t>{0, 1, 16, 512, 4095}) {
      StatusOr<ByteBuffer> memory = ByteBuffer::Allocate(size + misalign + kGuard);
      ASSERT_OK(memory);
      std::memset(memory->data.get(), 0xa5, size + misalign + kGuard);  // touched, like a built model
      std::byte* start = memory->data.get() + misalign;
      uint32_t read_crc = 1;
      ASSERT_OK(ReadRegularFileInto(path, std::span<std::byte>(start, size), &read_crc))
          << "size " << size << " misalign " << misalign;
      EXPECT_TRUE(size == 0 || std::memcmp(start, pattern.data(), size) == 0)
          << "size " << size << " misalign " << misalign;
      EXPECT_EQ(read_crc, written_crc) << "size " << size << " misalign " << misalign;
      for (size_t i = 0; i < misalign; ++i) ASSERT_EQ(memory->data[i], std::byte{0xa5}) << "before, " << i;
      for (size_t i = 0; i < kGuard; ++i) ASSERT_EQ(start[size + i], std::byte{0xa5}) << "after, " << i;
    }
    ASSERT_EQ(::unlink(path.c_str()), 0);
  }
  EXPECT_OK(RemoveTree(dir));
}

TEST(StreamingIoTest, ReadingIntoCallerMemoryChecksTheSizeBeforeWriting) {
  const std::string dir = FreshTestDir();
  ASSERT_OK(MakeDirectories(dir));
  const std::vector<std::byte> data = PatternBytes(2, 0, 2 * kMiB + 3);
  const std::string path = dir + "/blob";
  ASSERT_OK(WriteFileDurably(path, data, nullptr));
  std::vector<std::byte> dest(data.size() - 1, std::byte{0x5a});
  const Status read = ReadRegularFileInto(path, dest, nullptr);
  EXPECT_EQ(read.code(), StatusCode::kDataLoss) << read;
  EXPECT_NE(read.message().find("extended"), std::string::npos) << read;
  EXPECT_TRUE(std::all_of(dest.begin(), dest.end(), [](std::byte b) { return b == std::byte{0x5a}; }));
  EXPECT_OK(RemoveTree(dir));
}

TEST(StreamingIoTest, AFileShorterThanExpectedIsDataLoss) {
  const std::string dir = FreshTestDir();
  ASSERT_OK(MakeDirectories(dir));
  const std::vector<std::byte> data = PatternBytes(1, 0, 9 * kMiB + 3);
  const std::string path = dir + "/short";
  ASSERT_OK(WriteFileDurably(path, data, nullptr));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  StatusOr<ByteBuffer> buffer = ByteBuffer::Allocate(10 * kMiB);
  ASSERT_OK(buffer);
  uint32_t crc = 0;
  const Status read = ReadStreaming(fd, *buffer, path, &crc);
  ::close(fd);
  EXPECT_EQ(read.code(), StatusCode::kDataLoss) << read;
  EXPECT_NE(read.message().find("ended after " + std::to_string(data.size()) + " of"), std::string::npos) << read;
  EXPECT_OK(RemoveTree(dir));
}

TEST(StreamingIoTest, DamageInsideALargeBlobIsSkippedWithItsReason) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  CheckpointOptions options;
  options.dir = dir;
  options.keep_last = 5;
  options.log = log.fn();
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  ASSERT_OK(store);
  const size_t size = 9 * kMiB + 4097;  // two chunks, an unaligned tail
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<std::byte> model = PatternBytes(step, 0, size);
    const BlobRef blobs[] = {{"model", model}};
    ASSERT_OK((*store)->Save(step, 1, blobs));
  }
  FlipByte(dir + "/step-3/model", 8 * kMiB + 100);                // in the second chunk
  FlipByte(dir + "/step-2/model", static_cast<off_t>(size) - 2);  // in the buffered tail
  StatusOr<LoadedCheckpoint> loaded = (*store)->LoadLatest();
  ASSERT_OK(loaded);
  EXPECT_EQ(loaded->manifest.step, 1);
  EXPECT_EQ(loaded->stats.skipped, 2);
  const std::vector<std::byte> want = PatternBytes(1, 0, size);
  EXPECT_EQ(std::memcmp(loaded->blobs.at("model").data.get(), want.data(), size), 0);
  EXPECT_TRUE(log.Contains({"step-3/model", "CRC32C"})) << ::testing::PrintToString(log.lines());
  EXPECT_TRUE(log.Contains({"step-2/model", "CRC32C"})) << ::testing::PrintToString(log.lines());
  EXPECT_OK(RemoveTree(dir));
}

}  // namespace
}  // namespace ringmaster::checkpoint
