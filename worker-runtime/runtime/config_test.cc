#include "worker-runtime/runtime/config.h"

#include <gtest/gtest.h>

#include "api/names.h"
#include "base/status_test_macros.h"

namespace ringmaster::runtime {
namespace {

std::string Var(std::string_view name) { return std::string(name); }

TEST(RuntimeConfigTest, DefaultsAreHorovodLike) {
  auto c = ParseRuntimeConfig({});
  ASSERT_OK(c);
  EXPECT_EQ(c->fusion_threshold_bytes, 64u << 20);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(3500));
  EXPECT_EQ(c->backend, comm::Backend::kAuto);
}

TEST(RuntimeConfigTest, ParsesEveryVariable) {
  auto c = ParseRuntimeConfig({{Var(api::env::kBackend), "gloo"},
                               {Var(api::env::kCollectiveTimeoutMs), "1500"},
                               {Var(api::env::kFusionThresholdBytes), "0"},
                               {Var(api::env::kCycleTimeMs), "0.5"},
                               {Var(api::env::kTimeline), "/tmp/t-{rank}.json"},
                               {Var(api::env::kProcessSets), "0,2;1,2,3"},
                               {Var(api::env::kDevice), "3"}});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->backend, comm::Backend::kGloo);
  EXPECT_EQ(c->timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(c->fusion_threshold_bytes, 0u);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(500));
  EXPECT_EQ(c->timeline_path, "/tmp/t-{rank}.json");
  EXPECT_EQ(c->process_sets, (std::vector<std::vector<int>>{{0, 2}, {1, 2, 3}}));
  EXPECT_EQ(c->device, 3);
  auto unset = ParseRuntimeConfig({});
  ASSERT_OK(unset);
  EXPECT_EQ(unset->device, -1) << "no RINGMASTER_DEVICE: the elastic driver picks and pins one";
}

// The opt-in non-ring allreduce: off (bit-identical to torch's Gloo) unless asked for by name.
TEST(RuntimeConfigTest, AllreduceAlgorithmIsExactUnlessBcubeIsAskedFor) {
  auto unset = ParseRuntimeConfig({});
  ASSERT_OK(unset);
  EXPECT_EQ(unset->allreduce, gloo::AllreducePolicy::kExact);
  auto bcube = ParseRuntimeConfig({{"RINGMASTER_ALLREDUCE_ALGORITHM", "bcube"}});
  ASSERT_OK(bcube);
  EXPECT_EQ(bcube->allreduce, gloo::AllreducePolicy::kBcube);
  auto exact = ParseRuntimeConfig({{"RINGMASTER_ALLREDUCE_ALGORITHM", "exact"}});
  ASSERT_OK(exact);
  EXPECT_EQ(exact->allreduce, gloo::AllreducePolicy::kExact);
  auto bad = ParseRuntimeConfig({{"RINGMASTER_ALLREDUCE_ALGORITHM", "fast"}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().ToString().find("RINGMASTER_ALLREDUCE_ALGORITHM"), std::string::npos) << bad.status();
}

TEST(RuntimeConfigTest, BadValuesNameTheVariable) {
  auto c = ParseRuntimeConfig({{Var(api::env::kCollectiveTimeoutMs), "soon"}});
  ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(api::env::kCollectiveTimeoutMs), std::string::npos);
  EXPECT_FALSE(ParseRuntimeConfig({{Var(api::env::kBackend), "mpi"}}).ok());
  EXPECT_FALSE(ParseRuntimeConfig({{Var(api::env::kProcessSets), "0,x"}}).ok());
  for (const char* device : {"-1", "gpu0", "1.5"}) {
    auto d = ParseRuntimeConfig({{Var(api::env::kDevice), device}});
    ASSERT_FALSE(d.ok()) << device;
    EXPECT_NE(d.status().message().find("RINGMASTER_DEVICE"), std::string::npos) << d.status();
  }
}

// Found by fuzz_worker_env (corpus: worker_env/process_set_rank_overflow): strtoll clamps an
// out-of-range number to LLONG_MAX, which became rank -1 in a process set; a huge timeout became a
// deadline that overflows the clock. Out-of-range values are refused now.
TEST(RuntimeConfigTest, OutOfRangeNumbersAreRefused) {
  for (const char* sets : {"0,2147483648", "0,99999999999999999999", "1;4294967296"}) {
    auto c = ParseRuntimeConfig({{Var(api::env::kProcessSets), sets}});
    ASSERT_FALSE(c.ok()) << sets;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("RINGMASTER_PROCESS_SETS"), std::string::npos) << c.status();
  }
  auto max_rank = ParseRuntimeConfig({{Var(api::env::kProcessSets), "0,2147483647"}});
  ASSERT_OK(max_rank);
  EXPECT_EQ(max_rank->process_sets[0][1], 2147483647);
  for (const char* ms : {"99999999999999999999", "9223372036854775807", "31536000001"}) {
    auto c = ParseRuntimeConfig({{Var(api::env::kCollectiveTimeoutMs), ms}});
    EXPECT_FALSE(c.ok()) << ms;
  }
  ASSERT_OK(ParseRuntimeConfig({{Var(api::env::kCollectiveTimeoutMs), "31536000000"}}));
  EXPECT_FALSE(ParseRuntimeConfig({{Var(api::env::kFusionThresholdBytes), "99999999999999999999"}}).ok());
}

}  // namespace
}  // namespace ringmaster::runtime
