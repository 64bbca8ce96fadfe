// GPU telemetry on a GPU machine (label gpu; without NVIDIA's driver these tests fail, they do not skip):
// the driver's own libnvidia-ml.so.1 loads and reports every visible GPU, the worker's /metrics carries
// each GPU series for it, and NCCL collectives add their payload to the GPU they ran on.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <iostream>

#include "base/status_test_macros.h"
#include "metrics/loopback_http_get.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/gpu/gpu_telemetry.h"
#include "worker-runtime/gpu/nvml.h"
#include "worker-runtime/memory/buffer_memory.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/nccl/nccl_communicator.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::gpu {
namespace {

using namespace std::chrono_literals;

TEST(NvmlGpuTest, TheDriversLibraryReadsEveryGpu) {
  auto nvml = Nvml::Open();
  ASSERT_OK(nvml) << nvml.status() << " -- this test needs a machine with an NVIDIA GPU and its driver";
  EXPECT_FALSE((*nvml)->DriverVersion().empty());
  auto devices = (*nvml)->Devices();
  ASSERT_OK(devices) << devices.status();
  ASSERT_FALSE(devices->empty());
  for (const auto& d : *devices) {
    SCOPED_TRACE(d.uuid);
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u);
    auto r = (*nvml)->Read(d);
    ASSERT_OK(r) << r.status();
    EXPECT_GT(r->memory_total_bytes, 1ull << 30);
    EXPECT_LE(r->memory_used_bytes, r->memory_total_bytes);
    EXPECT_GE(r->utilization, 0.0);
    EXPECT_LE(r->utilization, 1.0);
    if (r->power_watts) {
      EXPECT_GT(*r->power_watts, 0.0);
      EXPECT_LT(*r->power_watts, 5000.0);
    }
  }
}

TEST(NvmlGpuTest, TheWorkersMetricsCarryEveryGpuSeries) {
  std::vector<std::string> lines;
  std::shared_ptr<GpuTelemetry> t = OpenGpuTelemetry(GpuVisibility::FromEnvironment({}),
                                                     [&](LogLevel, std::string_view l) { lines.emplace_back(l); });
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_NE(t, nullptr) << lines[0];
  EXPECT_EQ(lines[0].rfind("GPU telemetry on: ", 0), 0u) << lines[0];
  elastic::WorkerMetrics m(t);
  ASSERT_OK(m.Serve("127.0.0.1:0"));
  const std::string text = metrics::LoopbackHttpGet(m.port(), "/metrics");
  const std::string g0 = "{gpu=\"0\",uuid=\"" + t->devices()[0].uuid + "\"} ";
  for (const char* family : {"ringmaster_worker_gpu_utilization_ratio", "ringmaster_worker_gpu_memory_used_bytes",
                             "ringmaster_worker_gpu_memory_total_bytes", "ringmaster_worker_gpu_nccl_bytes_total"}) {
    EXPECT_NE(text.find(family + g0), std::string::npos) << family << "\n" << text;
  }
  std::cout << text.substr(text.find("# HELP ringmaster_worker_gpu_")) << "\n";
}

// Two ranks on the first GPU (NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1), or one GPU each.
TEST(NcclTrafficGpuTest, CollectivesCountTheirPayloadOnTheirGpu) {
  ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    const int gpus = nccl::VisibleGpuCount();
    ASSERT_GT(gpus, 0) << "no GPU visible";
    auto traffic = std::make_shared<comm::DeviceTraffic>();
    nccl::NcclOptions no;
    no.device = ctx.rank % gpus;
    no.timeout = 60s;
    no.traffic = traffic;
    auto made = nccl::NcclCommunicator::Create(ctx.store, "nccl-traffic", ctx.rank, ctx.size, no);
    ASSERT_OK(made) << made.status();
    comm::Communicator& comm = **made;
    auto memory = memory::NewMemoryFor(comm::MemoryKind::kCuda, no.device);
    auto allocated = memory->Allocate(1 << 20);
    ASSERT_OK(allocated);
    void* buf = *allocated;
    ASSERT_OK(comm.Barrier());
    EXPECT_TRUE(traffic->Snapshot().empty()) << "a barrier carries no payload";
    ASSERT_OK(comm.Allreduce(buf, buf, 1000, common::DataType::kFloat32, common::ReduceOp::kSum));    // 4000
    ASSERT_OK(comm.Allgather(buf, static_cast<char*>(buf) + 4096, 100, common::DataType::kFloat64));  // 800
    ASSERT_OK(comm.ReduceScatter(buf, buf, 10, common::DataType::kInt32, common::ReduceOp::kSum));    // 2*10*4
    ASSERT_OK(comm.Broadcast(buf, buf, 7, common::DataType::kUInt8, 0));                              // 7
    auto split = comm.Split({0, 1}, "all");
    ASSERT_OK(split) << split.status();
    ASSERT_OK((*split)->Allreduce(buf, buf, 16, common::DataType::kInt64, common::ReduceOp::kMax));  // 128
    memory->Free(buf);
    EXPECT_EQ(traffic->Snapshot(), (std::map<int, uint64_t>{{no.device, 4000 + 800 + 80 + 7 + 128}}));
  });
  for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::gpu
