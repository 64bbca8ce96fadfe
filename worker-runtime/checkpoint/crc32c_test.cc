#include "worker-runtime/checkpoint/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::checkpoint {
namespace {

TEST(Crc32cTest, KnownValues) {
  // RFC 3720 (iSCSI) B.4 and the usual check value.
  EXPECT_EQ(Crc32c("123456789", 9), 0xe3069283u);
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xff);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62a8ab43u);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, HardwareMatchesPortableAndExtendComposes) {
  std::vector<unsigned char> data(4099);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 131 + (i >> 5));
  for (size_t offset : {0, 1, 3, 7}) {
    for (size_t len : {0, 1, 7, 8, 9, 63, 64, 1000, 4000}) {
      EXPECT_EQ(Crc32c(data.data() + offset, len), Crc32cExtendPortable(0, data.data() + offset, len));
    }
  }
  const uint32_t whole = Crc32c(data.data(), data.size());
  EXPECT_EQ(Crc32cExtend(Crc32c(data.data(), 1234), data.data() + 1234, data.size() - 1234), whole);
}

// Long inputs take the three-stream paths (blocks of 3 x 8 KiB, then 3 x 256 bytes) and their combining
// tables; every boundary and misalignment must agree with the byte-at-a-time table.
TEST(Crc32cTest, ThreeStreamPathsMatchPortable) {
  std::vector<unsigned char> data(3 * 8192 * 3 + 3 * 256 * 2 + 100);
  uint64_t x = 12345;
  for (unsigned char& b : data) b = static_cast<unsigned char>((x = x * 6364136223846793005ULL + 1) >> 56);
  for (size_t offset : std::initializer_list<size_t>{0, 3, 8}) {
    for (size_t len :
         std::initializer_list<size_t>{767, 768, 769, 3 * 256 + 8, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1,
                                       3 * 8192 + 3 * 256 + 13, 2 * 3 * 8192 + 5 * 256 + 7, data.size() - 8}) {
      EXPECT_EQ(Crc32cExtend(0x12345678u, data.data() + offset, len),
                Crc32cExtendPortable(0x12345678u, data.data() + offset, len))
          << "offset " << offset << " len " << len;
    }
  }
}

}  // namespace
}  // namespace ringmaster::checkpoint
