// The unpacked-image cache (rootfs_cache.h): an image is unpacked once, a root a lease holds is never
// pruned, and every root nobody holds goes when another image is unpacked. Images are built here with
// umoci (a file each, differing by content, so each has its own manifest). Needs root and umoci: without
// them the test fails, saying so (make deps installs umoci).
#include "tests/pod_runner/rootfs_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "tests/pod_runner/oci_image.h"
#include "tests/support/subprocess.h"

namespace ringmaster::testing {
namespace {

namespace fs = std::filesystem;

// Builds <dir>/images/NAME.tar (tag 1) holding /hello with CONTENT.
constexpr char kBuildImage[] = R"sh(set -eu
D=$1 NAME=$2 CONTENT=$3
W=$D/work-$NAME
rm -rf "$W"; mkdir -p "$W" "$D/images"
umoci init --layout "$W/layout"
umoci new --image "$W/layout:1"
umoci unpack --image "$W/layout:1" "$W/bundle" >/dev/null
printf '%s' "$CONTENT" >"$W/bundle/rootfs/hello"
umoci repack --image "$W/layout:1" "$W/bundle" >/dev/null
(cd "$W/layout" && tar -cf "$D/images/$NAME.tar" .)
rm -rf "$W"
)sh";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class RootfsCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0) << "unpacking images keeps file owners: run the tests as root";
    ASSERT_EQ(::access("/usr/bin/umoci", X_OK), 0) << "umoci is missing: run make deps";
    dir_ = fs::temp_directory_path() / ("rm-rootfs-cache-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    cache_ = dir_ + "/cache";
    for (const char* name : {"a", "b", "c"}) {
      auto built = RunCommand({"bash", "-c", kBuildImage, "build", dir_, name, std::string("content of ") + name},
                              std::chrono::seconds(60));
      ASSERT_COMMAND_OK(built);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  StatusOr<RootfsLease> Ensure(const std::string& name) {
    auto image = FindLocalImage(dir_ + "/images", name + ":1");
    if (!image.ok()) return image.status();
    return EnsureRootfs(*image, cache_, [this](const std::string& line) { lines_.push_back(line); });
  }

  // The unpacked roots in the cache (directories not starting with '.').
  int Roots() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(cache_))
      n += e.is_directory() && e.path().filename().string()[0] != '.';
    return n;
  }

  std::string dir_, cache_;
  std::vector<std::string> lines_;
};

TEST_F(RootfsCacheTest, UnpacksOnceAndReturnsTheImagesFiles) {
  auto first = Ensure("a");
  ASSERT_OK(first) << first.status();
  EXPECT_EQ(Read(first->rootfs() + "/hello"), "content of a");
  const size_t unpack_lines = lines_.size();
  auto second = Ensure("a");
  ASSERT_OK(second) << second.status();
  EXPECT_EQ(second->rootfs(), first->rootfs());
  EXPECT_EQ(lines_.size(), unpack_lines) << "the second use unpacked again";
}

TEST_F(RootfsCacheTest, AHeldRootSurvivesAnotherUnpackAndAReleasedOneDoesNot) {
  auto a = Ensure("a");
  ASSERT_OK(a) << a.status();
  const std::string a_root = a->rootfs();
  {
    auto b = Ensure("b");  // a is held: it stays
    ASSERT_OK(b) << b.status();
    EXPECT_TRUE(fs::exists(a_root + "/hello"));
    EXPECT_EQ(Roots(), 2);
  }
  // b's lease is gone, a's is not: unpacking c removes b only.
  auto c = Ensure("c");
  ASSERT_OK(c) << c.status();
  EXPECT_TRUE(fs::exists(a_root + "/hello"));
  EXPECT_EQ(Roots(), 2);
  *a = RootfsLease();  // releases a
  EXPECT_EQ(PruneUnusedRootfs(cache_, fs::path(c->rootfs()).parent_path().string(), [](const std::string&) {}), 1);
  EXPECT_FALSE(fs::exists(a_root));
  EXPECT_EQ(Read(c->rootfs() + "/hello"), "content of c");
  // A released root is unpacked again when asked for.
  auto again = Ensure("a");
  ASSERT_OK(again) << again.status();
  EXPECT_EQ(Read(again->rootfs() + "/hello"), "content of a");
}

TEST_F(RootfsCacheTest, PruningTakesWhatADeadUnpackLeftButNotALiveOnes) {
  fs::create_directories(cache_);
  // A pid above the kernel's pid_max cannot be running.
  const std::string dead = cache_ + "/.unpacking-0123-99999999",
                    live = cache_ + "/.unpacking-0456-" + std::to_string(::getpid());
  fs::create_directories(dead + "/layout");
  fs::create_directories(live + "/layout");
  PruneUnusedRootfs(cache_, "", [](const std::string&) {});
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
}

TEST_F(RootfsCacheTest, AnArchiveThatIsNotAnImageIsAnErrorAndLeavesNothing) {
  auto image = FindLocalImage(dir_ + "/images", "a:1");
  ASSERT_OK(image) << image.status();
  std::ofstream(image->archive, std::ios::trunc) << "not a tar";
  auto lease = EnsureRootfs(*image, cache_, [](const std::string&) {});
  ASSERT_FALSE(lease.ok());
  EXPECT_NE(lease.status().message().find("unpacking image a:1"), std::string::npos) << lease.status();
  EXPECT_EQ(Roots(), 0);
}

}  // namespace
}  // namespace ringmaster::testing
