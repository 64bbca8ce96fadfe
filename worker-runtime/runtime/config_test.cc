#include "runtime/config.h"

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
  EXPECT_EQ(c->backend, Backend::kAuto);
}

TEST(RuntimeConfigTest, ParsesEveryVariable) {
  auto c = ParseRuntimeConfig({{Var(api::env::kBackend), "gloo"},
                               {Var(api::env::kCollectiveTimeoutMs), "1500"},
                               {Var(api::env::kFusionThresholdBytes), "0"},
                               {Var(api::env::kCycleTimeMs), "0.5"},
                               {Var(api::env::kTimeline), "/tmp/t-{rank}.json"},
                               {Var(api::env::kProcessSets), "0,2;1,2,3"}});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->backend, Backend::kGloo);
  EXPECT_EQ(c->timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(c->fusion_threshold_bytes, 0u);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(500));
  EXPECT_EQ(c->timeline_path, "/tmp/t-{rank}.json");
  EXPECT_EQ(c->process_sets, (std::vector<std::vector<int>>{{0, 2}, {1, 2, 3}}));
}

TEST(RuntimeConfigTest, BadValuesNameTheVariable) {
  auto c = ParseRuntimeConfig({{Var(api::env::kCollectiveTimeoutMs), "soon"}});
  ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(api::env::kCollectiveTimeoutMs), std::string::npos);
  EXPECT_FALSE(ParseRuntimeConfig({{Var(api::env::kBackend), "mpi"}}).ok());
  EXPECT_FALSE(ParseRuntimeConfig({{Var(api::env::kProcessSets), "0,x"}}).ok());
}

}  // namespace
}  // namespace ringmaster::runtime
