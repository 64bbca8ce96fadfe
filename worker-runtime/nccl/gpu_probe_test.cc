#include "nccl/gpu_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/world.h"

namespace ringmaster::runtime {
namespace {

TEST(GpuProbeTest, AutoPicksNcclExactlyWhenAGpuIsVisible) {
  int gpus = nccl::VisibleGpuCount();  // must not crash or throw without a driver
  EXPECT_GE(gpus, 0);
  EXPECT_EQ(ResolveBackend(Backend::kAuto), gpus > 0 ? Backend::kNccl : Backend::kGloo);
  EXPECT_EQ(ResolveBackend(Backend::kGloo), Backend::kGloo);
  if (::access("/dev/nvidiactl", F_OK) != 0) {
    EXPECT_EQ(gpus, 0);
  }
}

}  // namespace
}  // namespace ringmaster::runtime
