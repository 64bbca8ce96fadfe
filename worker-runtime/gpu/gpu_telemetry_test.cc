// GPU telemetry without a GPU: Nvml, GpuTelemetry and WorkerMetrics load a test-built stand-in for
// libnvidia-ml.so.1 (testing/fake_nvml.cc: NVML's entry points with NVML's C signatures) through the same
// dlopen/dlsym path as the driver's library, so what is tested is the loading, the reading and the export;
// only the numbers are the stand-in's. The driver's own library is tested on a GPU machine
// (gpu_telemetry_gpu_test.cc, label gpu).
#include "worker-runtime/gpu/gpu_telemetry.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "base/status_test_macros.h"
#include "metrics/loopback_http_get.h"
#include "metrics/metrics_server.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/gpu/nvml.h"
#include "worker-runtime/gpu/visible_gpus.h"

extern "C" struct FakeNvmlGpu {
  const char* uuid;
  unsigned index;
  unsigned utilization_percent;
  unsigned long long memory_used, memory_total;
  unsigned milliwatts;
  int power_result;
  int read_result;
};

namespace ringmaster::gpu {
namespace {

constexpr const char* kUuid0 = "GPU-11111111-2222-3333-4444-555555555555";
constexpr const char* kUuid1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
constexpr int kNotSupported = 3, kDriverNotLoaded = 9, kGpuIsLost = 15;

// Holds the stand-in loaded (its configuration lives as long as it stays loaded) and configures it.
class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dl_ = dlopen(FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(dl_, nullptr) << dlerror();
    configure_ = reinterpret_cast<void (*)(int, const FakeNvmlGpu*, unsigned)>(dlsym(dl_, "fake_nvml_configure"));
    initialized_ = reinterpret_cast<int (*)()>(dlsym(dl_, "fake_nvml_initialized"));
    ASSERT_NE(configure_, nullptr);
    ASSERT_NE(initialized_, nullptr);
    Configure(0, TwoGpus());
  }
  void TearDown() override {
    if (dl_) dlclose(dl_);
  }
  static std::vector<FakeNvmlGpu> TwoGpus() {
    return {{kUuid0, 0, 37, 1610612736ull, 85899345920ull, 215500, 0, 0},
            {kUuid1, 1, 100, 0, 42949672960ull, 0, kNotSupported, 0}};
  }
  void Configure(int init_result, const std::vector<FakeNvmlGpu>& gpus) {
    configure_(init_result, gpus.data(), static_cast<unsigned>(gpus.size()));
  }
  static std::string Text(const std::shared_ptr<GpuTelemetry>& t) { return metrics::RenderText({t}); }

  void* dl_ = nullptr;
  void (*configure_)(int, const FakeNvmlGpu*, unsigned) = nullptr;
  int (*initialized_)() = nullptr;
};

void ExpectLines(const std::string& text, const std::vector<std::string>& lines) {
  for (const auto& line : lines) EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << line << "\n" << text;
}

TEST_F(FakeNvmlTest, ReadingsFlowToTheMetricsTextExactly) {
  auto t = GpuTelemetry::Open({}, FAKE_NVML);
  ASSERT_OK(t) << t.status();
  ASSERT_EQ((*t)->devices().size(), 2u);
  EXPECT_EQ((*t)->Describe(), std::string("2 GPUs (0: ") + kUuid0 + ", 1: " + kUuid1 + ") through " + FAKE_NVML +
                                  ", driver 999.1.2-fake");
  (*t)->traffic()->Add(1, 4096);
  (*t)->traffic()->Add(1, 1024);
  (*t)->traffic()->Add(7, 1);  // a device that is not visible: not exported
  const std::string g0 = std::string("{gpu=\"0\",uuid=\"") + kUuid0 + "\"}";
  const std::string g1 = std::string("{gpu=\"1\",uuid=\"") + kUuid1 + "\"}";
  const std::string text = Text(*t);
  ExpectLines(
      text,
      {"# TYPE ringmaster_worker_gpu_utilization_ratio gauge", "ringmaster_worker_gpu_utilization_ratio" + g0 + " 0.37",
       "ringmaster_worker_gpu_utilization_ratio" + g1 + " 1", "# TYPE ringmaster_worker_gpu_memory_used_bytes gauge",
       "ringmaster_worker_gpu_memory_used_bytes" + g0 + " 1610612736",
       "ringmaster_worker_gpu_memory_used_bytes" + g1 + " 0",
       "ringmaster_worker_gpu_memory_total_bytes" + g0 + " 85899345920",
       "ringmaster_worker_gpu_memory_total_bytes" + g1 + " 42949672960",
       "# TYPE ringmaster_worker_gpu_power_watts gauge", "ringmaster_worker_gpu_power_watts" + g0 + " 215.5",
       "# TYPE ringmaster_worker_gpu_nccl_bytes_total counter", "ringmaster_worker_gpu_nccl_bytes_total" + g0 + " 0",
       "ringmaster_worker_gpu_nccl_bytes_total" + g1 + " 5120"});
  // The second GPU reports no power (NOT_SUPPORTED): no series, and no error.
  EXPECT_EQ(text.find("ringmaster_worker_gpu_power_watts" + g1), std::string::npos) << text;
  EXPECT_EQ(text.find("gpu=\"7\""), std::string::npos) << text;

  // Read at every scrape: a changed reading shows in the next text.
  auto gpus = TwoGpus();
  gpus[0].utilization_percent = 5;
  Configure(0, gpus);
  ExpectLines(Text(*t), {"ringmaster_worker_gpu_utilization_ratio" + g0 + " 0.05"});
}

TEST_F(FakeNvmlTest, TheWorkerServesGpuSeriesBesideItsOwnAndCountsNcclBytesThroughTheDriverOptions) {
  std::shared_ptr<GpuTelemetry> t = OpenGpuTelemetry({}, nullptr, FAKE_NVML);
  ASSERT_NE(t, nullptr);
  elastic::WorkerMetrics m(t);
  ASSERT_EQ(m.gpu_traffic(), t->traffic());
  m.gpu_traffic()->Add(0, 64);
  ASSERT_OK(m.Serve("127.0.0.1:0"));
  const std::string text = metrics::LoopbackHttpGet(m.port(), "/metrics");
  EXPECT_NE(text.find("ringmaster_worker_step_seconds_count 0"), std::string::npos) << text;
  ExpectLines(text,
              {std::string("ringmaster_worker_gpu_nccl_bytes_total{gpu=\"0\",uuid=\"") + kUuid0 + "\"} 64",
               std::string("ringmaster_worker_gpu_memory_total_bytes{gpu=\"1\",uuid=\"") + kUuid1 + "\"} 42949672960"});
  EXPECT_NE(text.find(m.Render()), std::string::npos) << "Render() is the body /metrics serves";
}

TEST_F(FakeNvmlTest, OnlyTheVisibleGpusInTheProcesssNumbering) {
  auto t = GpuTelemetry::Open({std::string("GPU-aaaa"), std::nullopt}, FAKE_NVML);
  ASSERT_OK(t) << t.status();
  const std::string text = Text(*t);
  // The second physical GPU is this process's device 0.
  ExpectLines(text,
              {std::string("ringmaster_worker_gpu_memory_total_bytes{gpu=\"0\",uuid=\"") + kUuid1 + "\"} 42949672960"});
  EXPECT_EQ(text.find(kUuid0), std::string::npos) << text;

  auto none = GpuTelemetry::Open({std::string(""), std::nullopt}, FAKE_NVML);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound) << none.status();
  EXPECT_NE(none.status().message().find("CUDA_VISIBLE_DEVICES="), std::string::npos) << none.status();
}

TEST_F(FakeNvmlTest, AGpuThatFailsToReadHasNoGaugesInThatScrapeAndTheOthersDo) {
  auto t = GpuTelemetry::Open({}, FAKE_NVML);
  ASSERT_OK(t) << t.status();
  auto gpus = TwoGpus();
  gpus[0].read_result = kGpuIsLost;
  Configure(0, gpus);
  const std::string g0 = std::string("{gpu=\"0\",uuid=\"") + kUuid0 + "\"}";
  const std::string text = Text(*t);
  for (const char* family : {"ringmaster_worker_gpu_utilization_ratio", "ringmaster_worker_gpu_memory_used_bytes",
                             "ringmaster_worker_gpu_memory_total_bytes", "ringmaster_worker_gpu_power_watts"}) {
    EXPECT_EQ(text.find(family + g0), std::string::npos) << family << "\n" << text;
  }
  ExpectLines(text, {"ringmaster_worker_gpu_nccl_bytes_total" + g0 + " 0",
                     std::string("ringmaster_worker_gpu_memory_used_bytes{gpu=\"1\",uuid=\"") + kUuid1 + "\"} 0"});
  auto nvml = Nvml::Open(FAKE_NVML);
  ASSERT_OK(nvml) << nvml.status();
  auto devices = (*nvml)->Devices();
  ASSERT_OK(devices) << devices.status();
  auto read = (*nvml)->Read((*devices)[0]);
  EXPECT_EQ(read.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(read.status().message(), "nvmlDeviceGetUtilizationRates: GPU is lost");
}

TEST_F(FakeNvmlTest, InitFailureIsUnavailableWithNvmlsWordsAndLeavesNothingInitialized) {
  Configure(kDriverNotLoaded, TwoGpus());
  auto nvml = Nvml::Open(FAKE_NVML);
  EXPECT_EQ(nvml.status().code(), StatusCode::kUnavailable) << nvml.status();
  EXPECT_EQ(nvml.status().message(), "nvmlInit_v2 failed: Driver Not Loaded");
  EXPECT_EQ(initialized_(), 0);

  Configure(0, {});
  auto t = GpuTelemetry::Open({}, FAKE_NVML);
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound) << t.status();
  EXPECT_NE(t.status().message().find("sees no GPU"), std::string::npos) << t.status();
  EXPECT_EQ(initialized_(), 0) << "the failed Open shut NVML down again";

  Configure(0, TwoGpus());
  {
    auto ok = Nvml::Open(FAKE_NVML);
    ASSERT_OK(ok) << ok.status();
    EXPECT_EQ(initialized_(), 1);
  }
  EXPECT_EQ(initialized_(), 0) << "~Nvml calls nvmlShutdown";
}

// The chart's dashboard shows these series in panels marked "[gpu]" (its convention: the scrape test expects
// them empty on machines without a GPU), and only there; every GPU family a panel reads is one exported here.
TEST_F(FakeNvmlTest, TheDashboardsGpuPanelsReadExportedFamiliesAndAreMarked) {
  auto t = GpuTelemetry::Open({}, FAKE_NVML);
  ASSERT_OK(t) << t.status();
  const std::string text = Text(*t);
  std::ifstream file(std::string(RINGMASTER_SOURCE_DIR) + "/helm/ringmaster/dashboards/ringmaster-operator.json");
  const nlohmann::json dashboard = nlohmann::json::parse(file, nullptr, false);
  ASSERT_TRUE(dashboard.is_object());
  std::set<std::string> read;
  int gpu_panels = 0;
  for (const auto& panel : dashboard["panels"]) {
    const bool marked = panel.value("description", "").rfind("[gpu]", 0) == 0;
    gpu_panels += marked;
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      const std::string expr = target.value("expr", "");
      EXPECT_EQ(marked, expr.find("ringmaster_worker_gpu_") != std::string::npos)
          << panel.value("title", "") << ": " << expr;
      const std::regex family("ringmaster_worker_gpu_[a-z_]+");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), family); it != std::sregex_iterator(); ++it) {
        read.insert(it->str());
      }
    }
  }
  EXPECT_EQ(gpu_panels, 4);
  for (const auto& f : read) EXPECT_NE(text.find("# TYPE " + f + " "), std::string::npos) << f << " is not exported";
  EXPECT_EQ(read.size(), 5u) << "every GPU family has a panel";
}

TEST(NvmlTest, ALibraryWithoutAnEntryPointIsRefusedByName) {
  auto nvml = Nvml::Open(FAKE_NVML_NO_MEMORY);
  EXPECT_EQ(nvml.status().code(), StatusCode::kFailedPrecondition) << nvml.status();
  EXPECT_NE(nvml.status().message().find("has no nvmlDeviceGetMemoryInfo"), std::string::npos) << nvml.status();
}

TEST(NvmlTest, WithoutTheLibraryTelemetryIsOffInExactlyOneLogLineAndNoGpuSeriesExist) {
  const std::string missing = ::testing::TempDir() + "no-such-dir/libnvidia-ml.so.1";
  auto nvml = Nvml::Open(missing);
  EXPECT_EQ(nvml.status().code(), StatusCode::kNotFound) << nvml.status();

  std::mutex mu;
  std::vector<std::string> lines;
  LogSink log = [&](LogLevel, std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  };
  std::shared_ptr<GpuTelemetry> t = OpenGpuTelemetry({}, log, missing);
  EXPECT_EQ(t, nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("GPU telemetry off: cannot load " + missing + ": ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("(no NVIDIA driver on this machine)"), std::string::npos) << lines[0];

  elastic::WorkerMetrics m(t);
  EXPECT_EQ(m.gpu_traffic(), nullptr);
  const std::string text = m.Render();
  EXPECT_NE(text.find("ringmaster_worker_generation"), std::string::npos) << text;
  EXPECT_EQ(text.find("ringmaster_worker_gpu_"), std::string::npos) << text;
  EXPECT_EQ(lines.size(), 1u) << "nothing more is logged at a scrape";

  // A file that is there but is no library: refused the same way, not crashed on.
  auto not_a_library = Nvml::Open("/proc/self/status");
  EXPECT_EQ(not_a_library.status().code(), StatusCode::kNotFound) << not_a_library.status();
}

std::vector<NvmlDevice> Machine(int n) {
  std::vector<NvmlDevice> all;
  for (int i = 0; i < n; ++i) {
    all.push_back({static_cast<unsigned>(i),
                   "GPU-" + std::to_string(i) + "0000000-0000-0000-0000-00000000000" + std::to_string(i), nullptr});
  }
  return all;
}

std::vector<unsigned> Indices(const std::vector<NvmlDevice>& devices) {
  std::vector<unsigned> out;
  for (const auto& d : devices) out.push_back(d.index);
  return out;
}

TEST(VisibleGpusTest, FollowsCudaAndTheDevicePluginsVariables) {
  using V = std::vector<unsigned>;
  const auto all = Machine(4);
  auto visible = [&](std::optional<std::string> cuda, std::optional<std::string> nvidia,
                     const std::vector<NvmlDevice>& from) { return Indices(VisibleDevices({cuda, nvidia}, from)); };
  EXPECT_EQ(visible(std::nullopt, std::nullopt, all), (V{0, 1, 2, 3}));
  // CUDA_VISIBLE_DEVICES: indices and UUID prefixes in its order; empty is none; an entry naming no
  // device (or one listed twice) ends the list.
  EXPECT_EQ(visible("2,0", std::nullopt, all), (V{2, 0}));
  EXPECT_EQ(visible(" GPU-3 , 1", std::nullopt, all), (V{3, 1}));
  EXPECT_EQ(visible("", std::nullopt, all), V{});
  EXPECT_EQ(visible("1,7,2", std::nullopt, all), V{1});
  EXPECT_EQ(visible("1,1,2", std::nullopt, all), V{1});
  EXPECT_EQ(visible("GPU-,2", std::nullopt, all), V{}) << "a prefix matching several GPUs names none";
  EXPECT_EQ(visible("MIG-0000,1", std::nullopt, all), V{});
  EXPECT_EQ(visible("-1,x", std::nullopt, all), V{});
  // NVIDIA_VISIBLE_DEVICES as the device plugin sets it: UUIDs; all; none.
  EXPECT_EQ(
      visible(std::nullopt, "GPU-30000000-0000-0000-0000-000000000003,GPU-10000000-0000-0000-0000-000000000001", all),
      (V{3, 1}));
  EXPECT_EQ(visible(std::nullopt, "all", all), (V{0, 1, 2, 3}));
  EXPECT_EQ(visible(std::nullopt, "none", all), V{});
  EXPECT_EQ(visible(std::nullopt, "void", all), V{});
  // Indices: on a host that shows every GPU they name NVML's; in an isolated container (NVML shows only
  // the listed GPUs, numbered afresh) they are all of them.
  EXPECT_EQ(visible(std::nullopt, "2,3", all), (V{2, 3}));
  EXPECT_EQ(visible(std::nullopt, "2,3", Machine(2)), (V{0, 1}));
  // CUDA's indices number what NVIDIA_VISIBLE_DEVICES leaves.
  EXPECT_EQ(visible("1", "2,3", all), V{3});
  EXPECT_EQ(visible("1", "GPU-30000000-0000-0000-0000-000000000003,GPU-1", all), V{1});

  std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", "0"}, {"PATH", "/bin"}};
  GpuVisibility from_env = GpuVisibility::FromEnvironment(env);
  EXPECT_EQ(from_env.cuda_visible_devices, std::optional<std::string>("0"));
  EXPECT_EQ(from_env.nvidia_visible_devices, std::nullopt);
}

}  // namespace
}  // namespace ringmaster::gpu
