#include "worker-runtime/nccl/gpu_probe.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/runtime/world.h"

namespace ringmaster::nccl {
namespace {

// A machine without GPUs: no device nodes, no NVIDIA_VISIBLE_DEVICES. Zero GPUs, no error, and `auto`
// picks Gloo.
TEST(GpuProbeTest, AMachineWithoutGpusCountsZero) {
  if (nccl::Cuda().ok()) GTEST_SKIP() << "a CUDA runtime loads here: this test is about machines without one";
  StatusOr<int> n = nccl::VisibleGpus(nccl::GpuEvidence{});
  ASSERT_OK(n);
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(nccl::VisibleGpuCount(), 0);
}

// A pod that was given GPUs (the device plugin set NVIDIA_VISIBLE_DEVICES) but cannot use them must not
// train on CPU while its peers use NCCL: an error naming the problem and the way out.
TEST(GpuProbeTest, GpusGivenButUnusableIsAnError) {
  if (nccl::Cuda().ok()) GTEST_SKIP() << "a CUDA runtime loads here: this test is about a broken one";
  nccl::GpuEvidence evidence;
  evidence.nvidia_visible_devices = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
  ASSERT_TRUE(evidence.HasGpus());
  StatusOr<int> n = nccl::VisibleGpus(evidence);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(n.status().message().find("RINGMASTER_BACKEND=gloo"), std::string::npos) << n.status();
}

TEST(GpuProbeTest, EvidenceOfGpus) {
  EXPECT_FALSE(nccl::GpuEvidence{}.HasGpus());
  EXPECT_FALSE((nccl::GpuEvidence{false, "void"}).HasGpus());
  EXPECT_FALSE((nccl::GpuEvidence{false, "none"}).HasGpus());
  EXPECT_TRUE((nccl::GpuEvidence{false, "all"}).HasGpus());
  EXPECT_TRUE((nccl::GpuEvidence{true, ""}).HasGpus());
}

TEST(GpuProbeTest, AnExplicitBackendIsKept) {
  EXPECT_EQ(*runtime::ResolveBackend(comm::Backend::kGloo), comm::Backend::kGloo);
  EXPECT_EQ(*runtime::ResolveBackend(comm::Backend::kNccl), comm::Backend::kNccl);
}

}  // namespace
}  // namespace ringmaster::nccl
