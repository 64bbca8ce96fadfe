// A crash or a bad disk can leave any of these behind; LoadLatest must skip
// each one with a logged reason and return the previous good checkpoint.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>

#include "base/status_test_macros.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/checkpoint/checkpoint_testing.h"

namespace ringmaster::checkpoint {
namespace {

using testing::FlipByte;
using testing::FreshTestDir;
using testing::LogCapture;
using testing::PatternBytes;

struct Damage {
  std::string name;
  std::function<void(const std::string& step_dir)> apply;
  std::vector<std::string> expect_in_log;  // the reason names the file and the problem
  bool skipped = true;                     // false: no step dir, nothing to skip (temp dirs)
};

void Truncate(const std::string& path, off_t size) { ASSERT_EQ(::truncate(path.c_str(), size), 0) << path; }

void WriteText(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

std::vector<Damage> AllDamage() {
  return {
      {"missing_manifest",
       [](const std::string& d) { ASSERT_EQ(::unlink((d + "/MANIFEST.json").c_str()), 0); },
       {"step-3", "MANIFEST.json", "manifest missing", "DataLoss"}},
      {"truncated_blob",
       [](const std::string& d) { Truncate(d + "/model", 1000); },
       {"step-3/model", "truncated", "DataLoss"}},
      {"empty_blob", [](const std::string& d) { Truncate(d + "/model", 0); }, {"step-3/model", "truncated"}},
      {"flipped_byte",
       [](const std::string& d) { FlipByte(d + "/model", 5000); },
       {"step-3/model", "CRC32C", "corrupt", "DataLoss"}},
      {"missing_blob",
       [](const std::string& d) { ASSERT_EQ(::unlink((d + "/cursor").c_str()), 0); },
       {"step-3", "blob \"cursor\" missing"}},
      {"garbage_manifest",
       [](const std::string& d) { WriteText(d + "/MANIFEST.json", "\x01\x02garbage{{"); },
       {"step-3/MANIFEST.json", "not valid JSON"}},
      {"truncated_manifest",
       [](const std::string& d) { Truncate(d + "/MANIFEST.json", 40); },
       {"step-3/MANIFEST.json", "not valid JSON"}},
      {"manifest_of_other_step",
       [](const std::string& d) {
         ASSERT_EQ(::unlink((d + "/MANIFEST.json").c_str()), 0);
         ASSERT_EQ(::link((d + "/../step-2/MANIFEST.json").c_str(), (d + "/MANIFEST.json").c_str()), 0);
       },
       {"step-3/MANIFEST.json", "says step 2"}},
      {"blob_is_a_fifo",  // must not hang in open()
       [](const std::string& d) {
         ASSERT_EQ(::unlink((d + "/model").c_str()), 0);
         ASSERT_EQ(::mkfifo((d + "/model").c_str(), 0644), 0);
       },
       {"step-3/model", "not a regular file"}},
      {"blob_is_a_directory",
       [](const std::string& d) {
         ASSERT_EQ(::unlink((d + "/model").c_str()), 0);
         ASSERT_EQ(::mkdir((d + "/model").c_str(), 0755), 0);
       },
       {"step-3/model", "not a regular file"}},
      {"temp_dir_left_by_crash",  // a save killed before its rename
       [](const std::string& d) {
         const std::string tmp = d.substr(0, d.rfind('/')) + "/.tmp-step-3-1-1-dead";
         ASSERT_EQ(::rename(d.c_str(), tmp.c_str()), 0);
         ASSERT_EQ(::unlink((tmp + "/MANIFEST.json").c_str()), 0);
         Truncate(tmp + "/model", 77);
       },
       {},
       /*skipped=*/false},
  };
}

void PrintTo(const Damage& damage, std::ostream* os) { *os << damage.name; }

class CorruptionTest : public ::testing::TestWithParam<Damage> {};

TEST_P(CorruptionTest, LoadLatestSkipsItAndReturnsThePreviousGoodOne) {
  const Damage& damage = GetParam();
  const std::string dir = FreshTestDir();
  LogCapture log;
  CheckpointOptions options;
  options.dir = dir;
  options.keep_last = 5;
  options.log = log.fn();
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  ASSERT_OK(store);
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<std::byte> model = PatternBytes(step, 0, 20000), cursor = PatternBytes(step, 1, 30);
    const BlobRef blobs[] = {{"model", model}, {"cursor", cursor}};
    ASSERT_OK((*store)->Save(step, 2, blobs));
  }
  damage.apply(dir + "/step-3");
  if (::testing::Test::HasFatalFailure()) return;

  StatusOr<LoadedCheckpoint> loaded = (*store)->LoadLatest();
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->manifest.step, 2);
  EXPECT_EQ(loaded->stats.skipped, damage.skipped ? 1 : 0);
  const std::vector<std::byte> want = PatternBytes(2, 0, 20000);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), loaded->blobs.at("model").data.get()));
  if (damage.skipped) {
    EXPECT_TRUE(log.Contains(damage.expect_in_log)) << "log: " << ::testing::PrintToString(log.lines());
    StatusOr<LoadedCheckpoint> direct = (*store)->Load(3);
    ASSERT_FALSE(direct.ok());
    EXPECT_EQ(direct.status().code(), StatusCode::kDataLoss) << direct.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Damages, CorruptionTest, ::testing::ValuesIn(AllDamage()),
                         [](const ::testing::TestParamInfo<Damage>& info) { return info.param.name; });

TEST(CorruptionTest2, NothingLoadableIsNotFoundWithEveryReason) {
  const std::string dir = FreshTestDir();
  LogCapture log;
  CheckpointOptions options;
  options.dir = dir;
  options.log = log.fn();
  StatusOr<std::unique_ptr<CheckpointStore>> store = CheckpointStore::Open(options);
  ASSERT_OK(store);
  ASSERT_EQ(::mkdir((dir + "/step-1").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/step-2").c_str(), 0755), 0);
  WriteText(dir + "/step-2/MANIFEST.json", "{");
  StatusOr<LoadedCheckpoint> loaded = (*store)->LoadLatest();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound);
  EXPECT_NE(loaded.status().message().find("step-1"), std::string::npos) << loaded.status();
  EXPECT_NE(loaded.status().message().find("step-2/MANIFEST.json"), std::string::npos) << loaded.status();
  EXPECT_EQ(log.lines().size(), 2u);
}

}  // namespace
}  // namespace ringmaster::checkpoint
