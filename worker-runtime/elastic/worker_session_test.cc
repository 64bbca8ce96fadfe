// WorkerSession, the Python package's core, in one process: a script started by hand is a world of one
// that joins, runs collectives, commits and keeps its committed bytes; bad environments are refused by name;
// a suspended job's workers leave at one commit after rank 0's final checkpoint, which the resumed job loads.
#include "worker-runtime/elastic/worker_session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/membership/file_source.h"
#include "worker-runtime/testing/scripted_source.h"

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
  ASSERT_OK((*session)->Commit("model bytes", {2, 40}));
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
    ASSERT_OK((*session)->Commit("step one", {0, 2}));
    ASSERT_OK((*session)->Commit("step two", {0, 4}));
    ASSERT_OK((*session)->AgreeOnLast());  // the last step counts (and is checkpointed) once agreed
    (*session)->Finish();                  // waits for the last checkpoint
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

// One worker of a two-worker job driven as ringmaster.torch.elastic.run drives its session: a step's
// allreduce, then state.commit() (session.commit, then session.superseded(): HostsUpdatedInterrupt ->
// interrupted + join(), and a join() that says False is WorkerRemoved, exit 0).
struct PythonLikeWorker {
  explicit PythonLikeWorker(std::map<std::string, std::string> environment) : env(std::move(environment)) {}
  void Run(int64_t max_steps) {
    thread = std::thread([this, max_steps] {
      auto created = WorkerSession::Create(env, [this](LogLevel level, std::string_view line) {
        std::lock_guard lock(mu);
        log.emplace_back(level, std::string(line));
      });
      if (!created.ok()) {
        outcome = created.status();
        return;
      }
      session = std::move(created).value();
      if (Status s = session->Start(); !s.ok()) {
        outcome = s;
        return;
      }
      int64_t model = session->has_committed_bytes() ? std::stoll(session->committed_bytes()) : 0;
      resumed_at = session->committed_step();
      resumed_cursor = session->cursor();
      resumed_bytes = session->committed_bytes();
      while (session->committed_step() < max_steps) {
        ++started;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const int64_t one = 1;
        int64_t sum = 0;
        Status reduced =
            session->runtime()->Allreduce("step", &one, &sum, 1, common::DataType::kInt64, common::ReduceOp::kSum);
        bool rejoin = !reduced.ok();
        if (reduced.ok()) {
          model += sum;
          reduced = session->Commit(std::to_string(model),
                                    {0, static_cast<uint64_t>(session->committed_step() + 1)});  // state.commit()
          committed.store(session->committed_step());
          rejoin = !reduced.ok() || session->Superseded();
        }
        if (!rejoin) continue;
        session->Interrupted(reduced.ok() ? AbortedError("membership changed") : reduced);
        auto member = session->Join();
        if (!member.ok()) {
          outcome = member.status();
          return;
        }
        if (!*member) {
          left = true;  // WorkerRemoved: the process exits 0 here
          break;
        }
        model = std::stoll(session->committed_bytes());
      }
      outcome = Status::Ok();
    });
  }
  std::vector<std::string> Lines(std::string_view text) {
    std::lock_guard lock(mu);
    std::vector<std::string> found;
    for (const auto& [level, line] : log)
      if (line.find(text) != std::string::npos) found.push_back(line);
    return found;
  }

  std::map<std::string, std::string> env;
  std::mutex mu;
  std::vector<std::pair<LogLevel, std::string>> log;  // guarded by mu; outlives the session, which logs
  std::unique_ptr<WorkerSession> session;
  std::thread thread;
  Status outcome = InternalError("not run");
  bool left = false;
  std::atomic<int64_t> committed{0};
  int64_t started = 0;  // steps begun (committed or not)
  int64_t resumed_at = -1;
  data::SampleCursor resumed_cursor;
  std::string resumed_bytes;
};

// The Python package's path for a suspended job (the operator's empty generation of reason Suspended): both
// workers leave at the same commit -- superseded() says so at the agreed boundary, join() says False -- rank 0
// only once its final checkpoint of that step is on disk; a resumed job's sessions start from that step with
// its bytes and cursor.
TEST(WorkerSessionTest, ASuspendedJobLeavesAtOneCommitAndResumesFromRankZerosFinalCheckpoint) {
  const std::string dir = ::testing::TempDir() + "session-suspend-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/membership.json";
  auto record = [](int64_t gen, const std::vector<std::pair<std::string, int>>& members) {
    api::Membership m;
    m.generation = gen;
    m.reason = gen == 1 ? "JobStarted" : "Resumed";
    if (!members.empty()) m.coordinator = "127.0.0.1:" + std::to_string(members[0].second);
    for (size_t r = 0; r < members.size(); ++r)
      m.members.push_back({members[r].first, "", static_cast<int32_t>(r), "127.0.0.1", "node"});
    return m;
  };
  auto environment = [&](const std::string& id, int port) {
    return std::map<std::string, std::string>{
        {"RINGMASTER_MEMBERSHIP_FILE", file}, {"RINGMASTER_WORKER_ID", id},
        {"RINGMASTER_SECRET", "s"},           {"RINGMASTER_STORE_PORT", std::to_string(port)},
        {"RINGMASTER_HEALTH_PORT", "0"},      {"RINGMASTER_CHECKPOINT_DIR", dir + "/ckpt"}};
  };
  const int64_t kMaxSteps = 400;  // far more than the test waits for: the workers leave before
  int p0 = testing::FreePort(), p1 = testing::FreePort();
  ASSERT_OK(membership::WriteMembershipFile(file, record(1, {{"w0", p0}, {"w1", p1}})));
  int64_t boundary = 0;
  {
    PythonLikeWorker w0(environment("w0", p0)), w1(environment("w1", p1));
    w0.Run(kMaxSteps);
    w1.Run(kMaxSteps);
    for (int i = 0; i < 3000 && w0.committed.load() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    api::Membership suspended;
    suspended.generation = 2;
    suspended.reason = "Suspended";
    ASSERT_OK(membership::WriteMembershipFile(file, suspended));
    w0.thread.join();
    w1.thread.join();
    for (PythonLikeWorker* w : {&w0, &w1}) {
      ASSERT_OK(w->outcome) << w->outcome;
      EXPECT_TRUE(w->left) << "did not leave the suspended job";
    }
    boundary = w0.session->committed_step();
    EXPECT_GE(boundary, 5);
    EXPECT_EQ(w1.session->committed_step(), boundary) << "the two left at different commits";
    EXPECT_EQ(w0.started, boundary) << "a step begun past the boundary was rolled back";
    EXPECT_EQ(w1.started, boundary) << "a step begun past the boundary was rolled back";
    EXPECT_EQ(w0.Lines("suspended at step " + std::to_string(boundary) + ": final checkpoint saved").size(), 1u);
    EXPECT_TRUE(w1.Lines("final checkpoint").empty());
  }  // the sessions are destroyed: the processes have exited

  p0 = testing::FreePort();
  p1 = testing::FreePort();
  ASSERT_OK(membership::WriteMembershipFile(file, record(3, {{"w0", p0}, {"w1", p1}})));
  PythonLikeWorker r0(environment("w0", p0)), r1(environment("w1", p1));
  r0.Run(boundary);  // joins, restores, and has nothing left to train
  r1.Run(boundary);
  r0.thread.join();
  r1.thread.join();
  for (PythonLikeWorker* w : {&r0, &r1}) {
    ASSERT_OK(w->outcome) << w->outcome;
    EXPECT_EQ(w->resumed_at, boundary);
    EXPECT_EQ(w->resumed_bytes, std::to_string(2 * boundary));
    EXPECT_EQ(w->resumed_cursor, (data::SampleCursor{0, static_cast<uint64_t>(boundary)}));
    EXPECT_EQ(w->started, 0);
  }
  r0.session.reset();
  r1.session.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::elastic
