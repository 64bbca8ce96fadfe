#include "worker-runtime/checkpoint/checkpoint_testing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/file_io.h"

namespace ringmaster::checkpoint::testing {

std::string FreshTestDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() != '/') dir += '/';
  dir += "rm-ckpt-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" + std::to_string(::getpid());
  for (char& c : dir) {
    if (c == '\\') c = '_';
  }
  EXPECT_OK(RemoveTree(dir));
  return dir;
}

std::vector<std::byte> PatternBytes(int64_t step, int blob, size_t size) {
  std::vector<std::byte> out(size);
  uint64_t x =
      static_cast<uint64_t>(step) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(blob) * 0x632be59bd9b4e019ULL;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x += i;
    std::memcpy(out.data() + i, &x, 8);
  }
  for (; i < size; ++i) out[i] = static_cast<std::byte>(step + blob + static_cast<int64_t>(i));
  return out;
}

LogSink LogCapture::fn() {
  return [this](LogLevel, std::string_view line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
  };
}

std::vector<std::string> LogCapture::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

bool LogCapture::Contains(const std::vector<std::string>& parts) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& line : lines_) {
    bool all = true;
    for (const std::string& part : parts) all = all && line.find(part) != std::string::npos;
    if (all) return true;
  }
  return false;
}

void FlipByte(const std::string& path, int64_t at) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, at), 1) << path;
  b ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &b, 1, at), 1) << path;
  ::close(fd);
}

}  // namespace ringmaster::checkpoint::testing
