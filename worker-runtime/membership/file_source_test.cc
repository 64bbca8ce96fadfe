#include "worker-runtime/membership/file_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/status_test_macros.h"

namespace ringmaster::membership {
namespace {

using namespace std::chrono_literals;

api::Membership Record(int64_t generation, int n) {
  api::Membership r;
  r.generation = generation;
  r.coordinator = "127.0.0.1:1234";
  for (int i = 0; i < n; ++i) r.members.push_back({"w" + std::to_string(i), "u", i, "127.0.0.1", "local"});
  return r;
}

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("file_source_test." + std::to_string(::getpid()) + "." +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "membership.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<FileMembershipSource> Start() {
    auto s = FileMembershipSource::Start({path_, 10ms, [this](LogLevel, std::string_view l) {
                                            std::lock_guard lock(mu_);
                                            logs_.emplace_back(l);
                                          }});
    EXPECT_OK(s) << s.status();
    return std::move(s).value();
  }
  std::filesystem::path dir_;
  std::string path_;
  std::mutex mu_;
  std::vector<std::string> logs_;
};

TEST_F(FileSourceTest, MissingFileIsGenerationZeroThenWakesOnWrite) {
  auto source = Start();
  EXPECT_EQ(source->Latest().generation, 0);
  EXPECT_EQ(source->WaitNewer(0, 50ms).status().code(), StatusCode::kDeadlineExceeded);
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_OK(WriteMembershipFile(path_, Record(3, 2)));
  });
  auto got = source->WaitNewer(0, 5s);
  writer.join();
  ASSERT_OK(got) << got.status();
  EXPECT_EQ(*got, Record(3, 2));
  EXPECT_EQ(source->Latest(), Record(3, 2));
}

TEST_F(FileSourceTest, ExistingRecordKnownAtStartAndNewerGenerationsWake) {
  ASSERT_OK(WriteMembershipFile(path_, Record(1, 3)));
  auto source = Start();
  EXPECT_EQ(source->Latest().generation, 1);
  for (int g = 2; g <= 5; ++g) {
    ASSERT_OK(WriteMembershipFile(path_, Record(g, g)));
    auto got = source->WaitNewer(g - 1, 5s);
    ASSERT_OK(got) << got.status();
    EXPECT_EQ(got->generation, g);
    EXPECT_EQ(got->world_size(), g);
  }
}

// The launcher's rename is seen through inotify, not the next poll: with a poll interval of an hour, a new
// generation still wakes the waiter (and Stop still ends the poller at once: the test would hang otherwise).
TEST_F(FileSourceTest, ARenameOverTheFileWakesWaitersWithoutWaitingForThePoll) {
  ASSERT_OK(WriteMembershipFile(path_, Record(1, 2)));
  auto started = FileMembershipSource::Start({path_, std::chrono::hours(1), {}});
  ASSERT_OK(started) << started.status();
  auto source = std::move(started).value();
  EXPECT_EQ(source->Latest().generation, 1);
  for (int g = 2; g <= 4; ++g) {
    ASSERT_OK(WriteMembershipFile(path_, Record(g, 3)));
    auto got = source->WaitNewer(g - 1, 20s);
    ASSERT_OK(got) << "generation " << g << " was not seen without polling: " << got.status();
    EXPECT_EQ(got->generation, g);
  }
  source->Stop();
}

TEST_F(FileSourceTest, GarbledAndHalfWrittenContentIsIgnoredWithAReason) {
  ASSERT_OK(WriteMembershipFile(path_, Record(4, 2)));
  auto source = Start();
  std::string full = api::MembershipToJson(Record(5, 3)).dump();
  {
    std::ofstream(path_) << full.substr(0, full.size() / 2);  // half-written, in place
  }
  std::this_thread::sleep_for(100ms);
  { std::ofstream(path_) << "\x01\x02 garbage {{{"; }
  std::this_thread::sleep_for(100ms);
  {
    std::ofstream(path_) << R"({"generation": 9, "members": [{"rank": 1, "pod": "a"}]})";  // bad ranks
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(source->Latest(), Record(4, 2));
  EXPECT_EQ(source->WaitNewer(4, 50ms).status().code(), StatusCode::kDeadlineExceeded);
  {
    std::lock_guard lock(mu_);
    ASSERT_GE(logs_.size(), 2u);
    EXPECT_NE(logs_[0].find("ignored"), std::string::npos) << logs_[0];
  }
  ASSERT_OK(WriteMembershipFile(path_, Record(6, 1)));
  auto got = source->WaitNewer(4, 5s);
  ASSERT_OK(got) << got.status();
  EXPECT_EQ(got->generation, 6);
}

TEST_F(FileSourceTest, OlderGenerationIsIgnored) {
  ASSERT_OK(WriteMembershipFile(path_, Record(7, 2)));
  auto source = Start();
  ASSERT_OK(WriteMembershipFile(path_, Record(5, 4)));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(source->Latest().generation, 7);
}

TEST_F(FileSourceTest, StopWakesWaitersWithCancelled) {
  auto source = Start();
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    source->Stop();
  });
  auto got = source->WaitNewer(0, 10s);
  stopper.join();
  EXPECT_EQ(got.status().code(), StatusCode::kCancelled);
  source->Stop();  // idempotent
}

TEST_F(FileSourceTest, ConcurrentRewritesNeverShowAMixedRecord) {
  ASSERT_OK(WriteMembershipFile(path_, Record(1, 1)));
  auto source = Start();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int g = 2; g <= 60; ++g) ASSERT_OK(WriteMembershipFile(path_, Record(g, 1 + g % 7)));
    done = true;
  });
  int64_t seen = 1;
  while (seen < 60) {
    auto got = source->WaitNewer(seen, 5s);
    ASSERT_OK(got) << got.status();
    EXPECT_EQ(*got, Record(got->generation, 1 + got->generation % 7));
    EXPECT_GT(got->generation, seen);
    seen = got->generation;
  }
  writer.join();
  std::lock_guard lock(mu_);
  EXPECT_TRUE(logs_.empty()) << logs_.front();
}

// A hang report lands beside the membership file, where ringmaster-run reads it (api/hang_report.h); a newer one
// replaces it.
TEST_F(FileSourceTest, AHangReportIsAFileBesideTheMembership) {
  auto source = Start();
  api::HangReport r{"w1", 3, 31.5, 0.2, 77, "2026-12-06T10:00:00.000Z"};
  ASSERT_OK(source->ReportHang(r));
  r.generation = 4;
  ASSERT_OK(source->ReportHang(r));
  std::ifstream in(dir_ / api::HangReportFileName("w1"));
  std::stringstream text;
  text << in.rdbuf();
  auto back = api::DecodeHangReport("w1", text.str());
  ASSERT_OK(back) << back.status() << ": " << text.str();
  EXPECT_EQ(*back, r);
  r.reporter.clear();
  EXPECT_EQ(source->ReportHang(r).code(), StatusCode::kInvalidArgument);
}

TEST(WriteMembershipFileTest, UnwritableDirectoryIsUnavailable) {
  Status s = WriteMembershipFile("/nonexistent-dir/x/membership.json", Record(1, 1));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
}

TEST(FileMembershipSourceStartTest, EmptyPathIsInvalid) {
  EXPECT_EQ(FileMembershipSource::Start({}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::membership
