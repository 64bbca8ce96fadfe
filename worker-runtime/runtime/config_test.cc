#include "runtime/config.h"

#include <gtest/gtest.h>
#include "base/status_test_macros.h"

namespace ringmaster::runtime {
namespace {

TEST(RuntimeConfigTest, DefaultsAreHorovodLike) {
  auto c = ParseRuntimeConfig({});
  ASSERT_OK(c);
  EXPECT_EQ(c->fusion_threshold_bytes, 64u << 20);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(3500));
  EXPECT_EQ(c->backend, Backend::kAuto);
}

TEST(RuntimeConfigTest, ParsesEveryVariable) {
  auto c = ParseRuntimeConfig({{"RINGMASTER_BACKEND", "gloo"},
                               {"RINGMASTER_COLLECTIVE_TIMEOUT_MS", "1500"},
                               {"RINGMASTER_FUSION_THRESHOLD_BYTES", "0"},
                               {"RINGMASTER_CYCLE_TIME_MS", "0.5"},
                               {"RINGMASTER_TIMELINE", "/tmp/t-{rank}.json"},
                               {"RINGMASTER_PROCESS_SETS", "0,2;1,2,3"}});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->backend, Backend::kGloo);
  EXPECT_EQ(c->timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(c->fusion_threshold_bytes, 0u);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(500));
  EXPECT_EQ(c->timeline_path, "/tmp/t-{rank}.json");
  EXPECT_EQ(c->process_sets, (std::vector<std::vector<int>>{{0, 2}, {1, 2, 3}}));
}

TEST(RuntimeConfigTest, BadValuesNameTheVariable) {
  auto c = ParseRuntimeConfig({{"RINGMASTER_COLLECTIVE_TIMEOUT_MS", "soon"}});
  ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("RINGMASTER_COLLECTIVE_TIMEOUT_MS"), std::string::npos);
  EXPECT_FALSE(ParseRuntimeConfig({{"RINGMASTER_BACKEND", "mpi"}}).ok());
  EXPECT_FALSE(ParseRuntimeConfig({{"RINGMASTER_PROCESS_SETS", "0,x"}}).ok());
}

}  // namespace
}  // namespace ringmaster::runtime
