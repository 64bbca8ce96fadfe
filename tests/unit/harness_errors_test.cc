// The harness scripts fail with one clear line that says what failed and what to do.
#include <gtest/gtest.h>

#include <string>

#include "base/status_test_macros.h"
#include "tests/support/subprocess.h"

namespace ringmaster::testing {
namespace {

const std::string kCluster = std::string(RINGMASTER_SOURCE_DIR) + "/tests/harness/cluster/cluster.sh";
const std::string kDeps = std::string(RINGMASTER_SOURCE_DIR) + "/hack/deps.sh";

// Exactly one line on stderr, starting with "ringmaster: error:" and carrying advice after " -- ".
void ExpectOneClearLine(const CommandResult& r, const std::string& what, const std::string& advice) {
  EXPECT_NE(r.exit_code, 0);
  std::string err = r.err;
  ASSERT_FALSE(err.empty());
  std::string last =
      err.substr(err.rfind('\n', err.size() - 2) == std::string::npos ? 0 : err.rfind('\n', err.size() - 2) + 1);
  EXPECT_EQ(last.rfind("ringmaster: error: ", 0), 0u) << err;
  EXPECT_NE(last.find(what), std::string::npos) << err;
  EXPECT_NE(last.find(" -- " + advice), std::string::npos) << err;
}

TEST(HarnessErrorsTest, ClusterUpWithoutDirSaysSo) {
  auto r = RunCommand({kCluster, "up"});
  ASSERT_OK(r) << r.status();
  ExpectOneClearLine(*r, "--dir is required", "e.g.");
}

TEST(HarnessErrorsTest, UnknownClusterCommandIsRefused) {
  auto r = RunCommand({kCluster, "explode", "--dir", ::testing::TempDir() + "/c"});
  ASSERT_OK(r) << r.status();
  ExpectOneClearLine(*r, "unknown command 'explode'", "use up, down, status, push or restart");
}

// `cluster.sh push` needs a running cluster with a registry (one started with real nodes).
TEST(HarnessErrorsTest, PushWithoutAClusterSaysHowToStartOne) {
  auto r = RunCommand({kCluster, "push", "--dir", ::testing::TempDir() + "/no-cluster"});
  ASSERT_OK(r) << r.status();
  ExpectOneClearLine(*r, "no cluster is running in", "start one: make cluster-up");
}

TEST(HarnessErrorsTest, ClusterUpWithoutBuiltToolsPointsToMakeDeps) {
  auto r = RunCommand({"env", "RINGMASTER_CACHE=" + ::testing::TempDir() + "/empty-cache", kCluster, "up", "--dir",
                       ::testing::TempDir() + "/no-tools-cluster"});
  ASSERT_OK(r) << r.status();
  ExpectOneClearLine(*r, "is not built", "run make deps");
}

TEST(HarnessErrorsTest, DownOnAClusterThatNeverRanIsHarmless) {
  auto r = RunCommand({kCluster, "down", "--dir", ::testing::TempDir() + "/never-ran"});
  ASSERT_OK(r) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
}

TEST(HarnessErrorsTest, UnknownDepsTargetIsRefused) {
  auto r = RunCommand({kDeps, "everything"});
  ASSERT_OK(r) << r.status();
  ExpectOneClearLine(*r, "unknown deps target 'everything'", "use one of: all apt cuda python tools");
}

}  // namespace
}  // namespace ringmaster::testing
