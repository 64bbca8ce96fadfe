#include "nccl/nccl_version.h"

#include <gtest/gtest.h>
#include "base/status_test_macros.h"

namespace ringmaster::nccl {
namespace {

TEST(NcclVersionTest, DecodesNcclVersionCodes) {
  Version v{22703};
  EXPECT_EQ(v.ToString(), "2.27.3");
  EXPECT_TRUE(v.HasCommShrink());
  EXPECT_FALSE(v.HasCommRevoke());
  EXPECT_TRUE(Version{22800}.HasCommRevoke());
  EXPECT_FALSE(v.HasCommGrow());
  EXPECT_FALSE(Version{21704}.HasCommSplit());
}

// The headers `make deps` installs must carry the fault-tolerance API the elastic rebuild uses.
TEST(NcclVersionTest, CompiledAgainstNcclWithShrink) {
  EXPECT_TRUE(CompiledVersion().HasCommShrink()) << CompiledVersion().ToString();
  EXPECT_TRUE(CompiledVersion().HasCommRevoke()) << CompiledVersion().ToString();
}

// libnccl loads and answers without a GPU, and matches the headers it was built with.
TEST(NcclVersionTest, LoadedLibraryMatchesHeaders) {
  StatusOr<Version> loaded = LoadedVersion();
  ASSERT_OK(loaded) << loaded.status();
  EXPECT_EQ(loaded->major(), CompiledVersion().major());
  EXPECT_EQ(loaded->minor(), CompiledVersion().minor());
}

}  // namespace
}  // namespace ringmaster::nccl
