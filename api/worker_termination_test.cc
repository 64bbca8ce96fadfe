#include "api/worker_termination.h"

#include <gtest/gtest.h>

namespace ringmaster::api {
namespace {

TEST(WorkerTerminationTest, NamesTheWorkerNodeGpuAndErrorAndParsesBack) {
  WorkerTermination t{"bert-worker-3", "gpu-node-7", "2 (GPU-8932f937-d72c-4106-c12f-20bd9faed9f6)",
                      "DataLoss: GPU 2: cudaErrorIllegalAddress: an illegal memory access was encountered"};
  const std::string m = FormatTerminationMessage(t);
  EXPECT_EQ(
      m,
      "worker bert-worker-3 on node gpu-node-7, GPU 2 (GPU-8932f937-d72c-4106-c12f-20bd9faed9f6): DataLoss: GPU 2: "
      "cudaErrorIllegalAddress: an illegal memory access was encountered");
  EXPECT_EQ(ParseTerminationMessage(m), t);
}

TEST(WorkerTerminationTest, UnknownNodeAndNoGpuRoundTripAsEmpty) {
  WorkerTermination t{"w4", "", "", "FailedPrecondition: no NCCL library could be loaded"};
  const std::string m = FormatTerminationMessage(t);
  EXPECT_EQ(m, "worker w4 on node unknown, GPU none: FailedPrecondition: no NCCL library could be loaded");
  EXPECT_EQ(ParseTerminationMessage(m), t);
}

TEST(WorkerTerminationTest, AnotherFormIsAllError) {
  // The log tail the kubelet takes under FallbackToLogsOnError.
  const std::string tail = "Traceback (most recent call last):\n  ...\nRuntimeError: worker x on node y";
  WorkerTermination t = ParseTerminationMessage(tail);
  EXPECT_EQ(t.node, "");
  EXPECT_EQ(t.gpu, "");
  EXPECT_EQ(t.error, tail);
  EXPECT_EQ(ParseTerminationMessage("worker a b on node n, GPU 1: x").node, "") << "a worker id has no space";
}

TEST(WorkerTerminationTest, ALongErrorIsCutToTheKubeletsLimitAtACharacterBoundary) {
  std::string error;
  while (error.size() < 2 * kTerminationMessageLimit) error += "\xC3\xA9";  // é, two bytes
  const std::string m = FormatTerminationMessage({"w0", "n", "0", error});
  ASSERT_LE(m.size(), kTerminationMessageLimit);
  EXPECT_EQ(m.substr(m.size() - 3), "...");
  // The byte before "..." ends a whole é.
  EXPECT_EQ(static_cast<unsigned char>(m[m.size() - 4]), 0xA9);
  EXPECT_EQ(TruncateUtf8("abc", 3), "abc");
  EXPECT_EQ(TruncateUtf8("abcdef", 5), "ab...");
}

}  // namespace
}  // namespace ringmaster::api
