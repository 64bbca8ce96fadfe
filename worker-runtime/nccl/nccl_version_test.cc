#include "worker-runtime/nccl/nccl_version.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/status_test_macros.h"
#include "worker-runtime/nccl/gpu_api.h"

namespace ringmaster::nccl {
namespace {

TEST(NcclVersionTest, GatesEachCallOnTheReleaseWhereItWorks) {
  Version v{22703};
  EXPECT_EQ(v.ToString(), "2.27.3");
  EXPECT_TRUE(v.HasCommShrink());
  EXPECT_FALSE(Version{22700}.HasCommShrink());
  EXPECT_FALSE(v.HasCommRevoke());
  EXPECT_FALSE(Version{22803}.HasCommRevoke()) << "2.28.3 exports ncclCommRevoke, but it first works in 2.28.7";
  EXPECT_TRUE(Version{22807}.HasCommRevoke());
  EXPECT_FALSE(Version{22900}.HasCommGrow());
  EXPECT_TRUE(Version{22902}.HasCommGrow());
  EXPECT_FALSE(Version{21704}.HasCommSplit());
}

// The headers `make deps` installs must carry the fault-tolerance API the elastic rebuild uses.
TEST(NcclVersionTest, CompiledAgainstNcclWithShrinkRevokeAndGrow) {
  EXPECT_TRUE(CompiledVersion().HasCommShrink()) << CompiledVersion().ToString();
  EXPECT_TRUE(CompiledVersion().HasCommRevoke()) << CompiledVersion().ToString();
  EXPECT_TRUE(CompiledVersion().HasCommGrow()) << CompiledVersion().ToString();
}

// Opens `path` as the process's NCCL (in a forked child: one NCCL per process) and prints what the table
// holds; exits 0 when `expect` holds.
void OpenAndCheck(const char* path, const std::function<bool(const NcclApi&)>& expect) {
  GpuLibrarySearch search;
  search.nccl_library = path;
  auto lib = OpenNccl(search);
  if (!lib.ok()) {
    fprintf(stderr, "open: %s\n", lib.status().ToString().c_str());
    exit(2);
  }
  auto api = ResolveNcclApi(*lib);
  if (!api.ok()) {
    fprintf(stderr, "resolve: %s\n", api.status().ToString().c_str());
    exit(3);
  }
  fprintf(stderr, "loaded NCCL %s from %s; shrink %d revoke %d grow %d; missing: %s\n",
          (*api)->version.ToString().c_str(), (*api)->library.path.c_str(), (*api)->ncclCommShrink != nullptr,
          (*api)->ncclCommRevoke != nullptr, (*api)->ncclCommGrow != nullptr, (*api)->MissingFeatures().c_str());
  exit(expect(**api) ? 0 : 1);
}

// The NCCL `make deps` unpacked loads without a GPU, matches the headers and has the whole API.
TEST(NcclLibraryTest, TheBuildsNcclLoadsWithEveryFaultToleranceCall) {
  EXPECT_EXIT(OpenAndCheck(RINGMASTER_TEST_NCCL_LIBRARY,
                           [](const NcclApi& api) {
                             return api.version.major() == CompiledVersion().major() &&
                                    api.version.minor() == CompiledVersion().minor() && api.ncclCommShrink &&
                                    api.ncclCommRevoke && api.ncclCommGrow && api.MissingFeatures().empty();
                           }),
              ::testing::ExitedWithCode(0), "loaded NCCL");
}

// An NCCL of the 2.21 era (no Shrink, no Revoke, no Grow) loads too: the calls are absent from the
// table, so the runtime rebuilds instead of failing at load with "undefined symbol".
TEST(NcclLibraryTest, AnOldNcclLoadsAndLacksShrinkAndRevoke) {
  EXPECT_EXIT(OpenAndCheck(RINGMASTER_TEST_OLD_NCCL_LIBRARY,
                           [](const NcclApi& api) {
                             return api.version.ToString() == "2.21.5" && !api.ncclCommShrink && !api.ncclCommRevoke &&
                                    !api.ncclCommGrow &&
                                    api.MissingFeatures().find("rebuilds the communicator") != std::string::npos;
                           }),
              ::testing::ExitedWithCode(0), "loaded NCCL 2.21.5");
}

// Emulation asked for but its library absent: an error that says what to do, not a real GPU's NCCL.
TEST(NcclLibraryTest, EmulationWithoutItsLibraryIsAClearError) {
  GpuLibrarySearch search;
  search.emulated_gpus = 2;
  search.emulation_library = "/nonexistent/libringmaster_emulated_gpu.so";
  auto lib = OpenNccl(search);
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(lib.status().message().find("RINGMASTER_GPU_EMULATION_LIBRARY"), std::string::npos) << lib.status();
}

}  // namespace
}  // namespace ringmaster::nccl
