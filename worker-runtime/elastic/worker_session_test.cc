// WorkerSession, the Python package's core, in one process: a script started by hand is a world of one
// that joins, runs collectives, commits and keeps its committed bytes; bad environments are refused by name.
#include "worker-runtime/elastic/worker_session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/status_test_macros.h"

namespace ringmaster::elastic {
namespace {

TEST(WorkerSessionTest, WithoutALauncherItIsAWorldOfOne) {
  auto session = WorkerSession::Create({}, {});
  ASSERT_OK(session) << session.status();
  ASSERT_OK((*session)->Start());
  SessionTopology t = (*session)->topology();
  EXPECT_EQ(t.generation, 1);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.size, 1);
  EXPECT_EQ(t.local_size, 1);
  EXPECT_EQ(t.cross_size, 1);
  EXPECT_EQ(t.worker_ids, std::vector<std::string>{"worker-0"});
  runtime::Runtime* rt = (*session)->runtime();
  ASSERT_NE(rt, nullptr);
  double in[3] = {1, 2, 3}, out[3] = {};
  ASSERT_OK(rt->Allreduce("x", in, out, 3, common::DataType::kFloat64, common::ReduceOp::kSum));
  EXPECT_EQ(out[2], 3);
  EXPECT_FALSE((*session)->Superseded());
  EXPECT_FALSE((*session)->journaling());
  EXPECT_EQ((*session)->JournalAttempt(0, 0, {1}).code(), StatusCode::kFailedPrecondition);

  const int64_t before = (*session)->committed_step();
  (*session)->Commit("model bytes", {2, 40});
  EXPECT_EQ((*session)->committed_step(), before + 1);
  EXPECT_EQ((*session)->committed_bytes(), "model bytes");
  EXPECT_EQ((*session)->cursor(), (data::SampleCursor{2, 40}));
  (*session)->Finish();
  (*session)->Finish();  // idempotent
}

TEST(WorkerSessionTest, CommitsReachTheCheckpointAndAFreshSessionResumesFromIt) {
  const std::string dir = ::testing::TempDir() + "session-ckpt-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::map<std::string, std::string> env = {{"RINGMASTER_CHECKPOINT_DIR", dir}, {"RINGMASTER_OUT", dir + "/out"}};
  std::filesystem::create_directories(dir + "/out");
  {
    auto session = WorkerSession::Create(env, {});
    ASSERT_OK(session) << session.status();
    ASSERT_OK((*session)->Start());
    EXPECT_TRUE((*session)->journaling());
    ASSERT_OK((*session)->JournalAttempt((*session)->committed_step(), 0, {4, 5}));
    (*session)->Commit("step one", {0, 2});
    (*session)->Commit("step two", {0, 4});
    (*session)->Finish();  // waits for the last checkpoint
  }
  auto resumed = WorkerSession::Create(env, {});
  ASSERT_OK(resumed) << resumed.status();
  ASSERT_OK((*resumed)->Start());
  EXPECT_EQ((*resumed)->committed_bytes(), "step two");
  EXPECT_EQ((*resumed)->cursor(), (data::SampleCursor{0, 4}));
  std::ifstream journal(dir + "/out/journal.worker-0.log");
  std::string first;
  std::getline(journal, first);
  EXPECT_EQ(first.substr(0, 2), "R ") << first;
  std::filesystem::remove_all(dir);
}

TEST(WorkerSessionTest, BadEnvironmentsAreRefusedByName) {
  auto bad_backend = WorkerSession::Create({{"RINGMASTER_BACKEND", "mpi"}}, {});
  ASSERT_FALSE(bad_backend.ok());
  EXPECT_NE(bad_backend.status().message().find("RINGMASTER_BACKEND"), std::string::npos) << bad_backend.status();
  auto no_secret = WorkerSession::Create({{"RINGMASTER_MEMBERSHIP_FILE", "/tmp/m.json"}}, {});
  ASSERT_FALSE(no_secret.ok());
  EXPECT_NE(no_secret.status().message().find("--secret"), std::string::npos) << no_secret.status();
  auto no_namespace = WorkerSession::Create({{"RINGMASTER_JOB_NAME", "j"}}, {});
  ASSERT_FALSE(no_namespace.ok());
  EXPECT_NE(no_namespace.status().message().find("RINGMASTER_JOB_NAMESPACE"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::elastic
