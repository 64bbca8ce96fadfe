#include "worker-runtime/nccl/gpu_errors.h"

#include <gtest/gtest.h>

namespace ringmaster::nccl {
namespace {

TEST(GpuErrorsTest, StickyCudaErrorsAreDataLossNamingTheGpu) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorECCUncorrectable, cudaErrorLaunchFailure,
                        cudaErrorHardwareStackError, cudaErrorMisalignedAddress}) {
    EXPECT_TRUE(IsStickyCudaError(e)) << e;
    EXPECT_EQ(CudaFailureCode(e, StatusCode::kAborted), StatusCode::kDataLoss) << e;
    EXPECT_NE(StickyNote(e, 3).find("GPU 3"), std::string::npos);
  }
  EXPECT_FALSE(IsStickyCudaError(cudaErrorNotReady));
  EXPECT_FALSE(IsStickyCudaError(cudaErrorInvalidValue));
  EXPECT_EQ(StickyNote(cudaErrorInvalidValue, 3), "");
}

TEST(GpuErrorsTest, ConfigurationAndDriverErrorsAreRefusalsOthersKeepTheCallSitesCode) {
  EXPECT_EQ(CudaFailureCode(cudaErrorInvalidDevice, StatusCode::kUnavailable), StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaFailureCode(cudaErrorNoDevice, StatusCode::kUnavailable), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaFailureCode(cudaErrorInsufficientDriver, StatusCode::kUnavailable), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaFailureCode(cudaErrorInvalidValue, StatusCode::kUnavailable), StatusCode::kUnavailable);
  EXPECT_EQ(CudaFailureCode(cudaErrorInvalidValue, StatusCode::kAborted), StatusCode::kAborted);
}

TEST(GpuErrorsTest, NcclRefusalsAtInitEndTheWorkerLaterTheyAreAnAbortedCommunicator) {
  EXPECT_EQ(NcclFailureCode(ncclUnhandledCudaError, true), StatusCode::kDataLoss);
  EXPECT_EQ(NcclFailureCode(ncclUnhandledCudaError, false), StatusCode::kDataLoss);
  EXPECT_EQ(NcclFailureCode(ncclInvalidUsage, true), StatusCode::kFailedPrecondition);
  EXPECT_EQ(NcclFailureCode(ncclInvalidArgument, true), StatusCode::kInvalidArgument);
  // A revoked or aborted communicator answers these to a collective: a rebuild follows.
  EXPECT_EQ(NcclFailureCode(ncclInvalidUsage, false), StatusCode::kAborted);
  EXPECT_EQ(NcclFailureCode(ncclInvalidArgument, false), StatusCode::kAborted);
  // A peer: rebuild.
  EXPECT_EQ(NcclFailureCode(ncclSystemError, true), StatusCode::kAborted);
  EXPECT_EQ(NcclFailureCode(ncclRemoteError, false), StatusCode::kAborted);
  EXPECT_EQ(NcclFailureCode(ncclInProgress, true), StatusCode::kAborted) << "a timed-out init";
}

}  // namespace
}  // namespace ringmaster::nccl
