// Unit tests: the committed state's encoding and rollback, the journal's
// exactly-once resolution, the launcher's chaos grammar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "base/status_test_macros.h"
#include "metrics/loopback_http_get.h"
#include "worker-runtime/checkpoint/crc32c.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/elastic/elastic_state.h"
#include "worker-runtime/elastic/sample_journal.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/membership/file_source.h"
#include "worker-runtime/tools/run/launcher.h"

namespace ringmaster::elastic {
namespace {

TEST(ElasticStateTest, CommitRestoreRollsBackUncommittedWork) {
  std::string model = "v1";
  ElasticState state([&] { return model; },
                     [&](std::string_view b) {
                       model = std::string(b);
                       return Status::Ok();
                     });
  EXPECT_FALSE(state.has_state());
  state.Commit(3, {1, 16});
  model = "v2-uncommitted";
  ASSERT_OK(state.Restore());
  EXPECT_EQ(model, "v1");
  EXPECT_EQ(state.committed_step(), 3);
  EXPECT_EQ(state.cursor(), (data::SampleCursor{1, 16}));
}

// A snapshot after the first is tentative: Restore rolls it back until Agree promotes it (the commit agreement).
TEST(ElasticStateTest, ATentativeStepIsRolledBackUnlessAgreed) {
  std::string model = "v0";
  ElasticState state([&] { return model; },
                     [&](std::string_view b) {
                       model = std::string(b);
                       return Status::Ok();
                     });
  state.Commit(0, {});
  model = "v1";
  state.Commit(1, {0, 4});
  EXPECT_TRUE(state.tentative());
  EXPECT_EQ(state.committed_step(), 1);
  EXPECT_EQ(state.agreed_step(), 0);
  const std::string agreed_wire = state.Encode();
  EXPECT_EQ(state.AgreedChecksum(), checkpoint::Crc32c(agreed_wire.data(), agreed_wire.size()));
  const std::string tentative_wire = state.EncodeTentative();
  EXPECT_EQ(state.TentativeChecksum(), checkpoint::Crc32c(tentative_wire.data(), tentative_wire.size()));
  EXPECT_NE(state.AgreedChecksum(), state.TentativeChecksum());
  model = "v2-garbage";
  ASSERT_OK(state.Restore());  // nobody confirmed step 1: back to step 0
  EXPECT_EQ(model, "v0");
  EXPECT_EQ(state.committed_step(), 0);
  EXPECT_FALSE(state.tentative());

  model = "v1";
  state.Commit(1, {0, 4});
  state.Agree(0);  // an older step: nothing to promote
  EXPECT_TRUE(state.tentative());
  state.Agree(1);
  EXPECT_FALSE(state.tentative());
  EXPECT_EQ(state.agreed_step(), 1);
  EXPECT_EQ(state.Encode(), tentative_wire);
  model = "v2";
  state.Commit(2, {0, 8});
  model = "v3-garbage";
  ASSERT_OK(state.Restore());
  EXPECT_EQ(model, "v1");
  EXPECT_EQ(state.committed_step(), 1);
  EXPECT_EQ(state.cursor(), (data::SampleCursor{0, 4}));
}

TEST(ElasticStateTest, EncodeAdoptRoundTripAndCorruptionIsDataLoss) {
  std::string a = "weights-of-a", b;
  ElasticState sa([&] { return a; },
                  [&](std::string_view x) {
                    a = std::string(x);
                    return Status::Ok();
                  });
  ElasticState sb([&] { return b; },
                  [&](std::string_view x) {
                    b = std::string(x);
                    return Status::Ok();
                  });
  sa.Commit(7, {2, 5});
  std::string wire = sa.Encode();
  ASSERT_OK(sb.Adopt(wire));
  ASSERT_OK(sb.Restore());
  EXPECT_EQ(b, "weights-of-a");
  EXPECT_EQ(sb.committed_step(), 7);
  EXPECT_EQ(sb.cursor(), (data::SampleCursor{2, 5}));
  EXPECT_EQ(sb.Adopt(wire.substr(0, wire.size() - 1)).code(), StatusCode::kDataLoss);
  EXPECT_EQ(sb.Adopt("garbage").code(), StatusCode::kDataLoss);
  EXPECT_EQ(sb.committed_step(), 7);  // unchanged by the failed adopts
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("journal_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(JournalTest, RolledBackAttemptsDoNotCountAndRedoneStepsCountOnce) {
  {
    auto a = SampleJournal::Open(Path("a"));
    auto b = SampleJournal::Open(Path("b"));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_OK(a->Restored(1, 0));
    ASSERT_OK(a->Attempt(1, 0, 0, {0, 1}));
    ASSERT_OK(b->Attempt(1, 0, 0, {2, 3}));
    ASSERT_OK(a->Attempt(1, 1, 0, {4, 5}));  // step 1 attempted, then b died: rolled back
    ASSERT_OK(a->Restored(2, 1));
    ASSERT_OK(a->Attempt(2, 1, 0, {4, 5, 6, 7}));  // redone by a alone
    ASSERT_OK(a->Attempt(2, 2, 1, {9}));           // beyond the final step
  }
  std::ofstream(Path("b"), std::ios::app) << "A 1 0 0";  // a torn last line
  auto got = ResolveJournals({Path("a"), Path("b")}, 2);
  ASSERT_OK(got) << got.status();
  std::vector<uint64_t> ids;
  for (const auto& s : *got) ids.push_back(s.sample);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(JournalTest, AStepCommittedByAPeerBeforeTheFailureIsKept) {
  // Step 3's allreduce completed on some rank before the failure: the next
  // generation resumes at 4, so every share of step 3 counts (even a dead rank's).
  {
    auto a = SampleJournal::Open(Path("a"));
    auto dead = SampleJournal::Open(Path("dead"));
    ASSERT_OK(a->Attempt(5, 3, 0, {10}));
    ASSERT_OK(dead->Attempt(5, 3, 0, {11}));
    ASSERT_OK(a->Restored(6, 4));
  }
  auto got = ResolveJournals({Path("a"), Path("dead")}, 4);
  ASSERT_OK(got);
  EXPECT_EQ(got->size(), 2u);
  EXPECT_EQ(ResolveJournals({Path("missing")}, 4).status().code(), StatusCode::kUnavailable);
}

TEST(ChaosSpecTest, ParsesEventsAndRejectsNonsense) {
  auto events = run::ParseChaos("kill@5:1,stop@7:0,add@9:2,killadd@11");
  ASSERT_OK(events) << events.status();
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ((*events)[0].action, "kill");
  EXPECT_EQ((*events)[0].step, 5);
  EXPECT_EQ((*events)[0].arg, 1);
  EXPECT_EQ((*events)[2].arg, 2);
  EXPECT_EQ((*events)[3].arg, 0);
  auto random = run::ParseChaos("random@3:3");
  ASSERT_OK(random);
  ASSERT_EQ(random->size(), 3u);
  EXPECT_EQ((*random)[2].step, 11);
  EXPECT_EQ((*random)[2].action, "random");
  EXPECT_EQ(run::ParseChaos("explode@1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run::ParseChaos("kill@x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run::ParseChaos("kill").status().code(), StatusCode::kInvalidArgument);
}

TEST(WorkerMetricsTest, ReadyOnceAvailableBeforeAnyMembershipAndSeriesByPhase) {
  WorkerMetrics m;
  ASSERT_OK(m.Serve("127.0.0.1:0"));
  ASSERT_GT(m.port(), 0);
  EXPECT_EQ(metrics::LoopbackHttpGet(m.port(), "/readyz").rfind("HTTP/1.1 503", 0), 0u);
  m.Available();  // store bound, membership watched: the operator may admit it now
  EXPECT_EQ(metrics::LoopbackHttpGet(m.port(), "/readyz").rfind("HTTP/1.1 200", 0), 0u);
  m.Joined(4, 3);
  RebuildStats stats;
  stats.detect = 0.2;
  stats.steps_lost = 2;
  m.Rebuilt(stats);
  m.Step(0.01);
  m.CheckpointSaved(0.5, 1000);
  m.Collective(0.001, 64);
  m.Samples(8);
  m.RebuildFailed();
  m.CheckpointFailed("save");
  EXPECT_EQ(metrics::LoopbackHttpGet(m.port(), "/readyz").rfind("HTTP/1.1 200", 0), 0u);
  std::string text = metrics::LoopbackHttpGet(m.port(), "/metrics");
  for (const char* want :
       {"ringmaster_worker_generation 4", "ringmaster_worker_world_size 3",
        "ringmaster_worker_rebuild_phase_seconds_count{phase=\"detect\"} 1",
        "ringmaster_worker_rebuild_seconds_count 1",
        "ringmaster_worker_rebuild_phase_seconds_count{phase=\"restore\"} 1", "ringmaster_worker_steps_lost_total 2",
        "ringmaster_worker_checkpoint_bytes_total{op=\"save\"} 1000", "ringmaster_worker_collective_bytes_total 64",
        "ringmaster_worker_step_seconds_count 1", "ringmaster_worker_samples_total 8",
        "ringmaster_worker_rebuild_failures_total 1", "ringmaster_worker_checkpoint_failures_total{op=\"save\"} 1",
        "ringmaster_worker_checkpoint_failures_total{op=\"restore\"} 0"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_NE(text.find(m.Render()), std::string::npos) << "Render() is the body /metrics serves";
}

// RingmasterCheckpointStale reads the time of the newest save: 0 until this worker saved one, then the wall
// clock (unix seconds) of its latest successful save; a failed save or a restore leaves it.
TEST(WorkerMetricsTest, LastCheckpointTimestampIsTheLatestSuccessfulSave) {
  auto timestamp = [](const WorkerMetrics& m) {
    const std::string text = m.Render();
    const std::string name = "\nringmaster_worker_last_checkpoint_timestamp_seconds ";
    const size_t at = text.find(name);
    EXPECT_NE(at, std::string::npos) << text;
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size()));
  };
  auto unix_now = [] {
    return static_cast<double>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  };
  WorkerMetrics m;
  EXPECT_EQ(timestamp(m), 0) << "no save yet";
  m.CheckpointRestored(0.1, 10);
  m.CheckpointFailed("save");
  EXPECT_EQ(timestamp(m), 0) << "a restore or a failed save is no save";
  const double before = unix_now();
  m.CheckpointSaved(0.5, 1000);
  const double after = unix_now();
  const double saved = timestamp(m);
  EXPECT_GE(saved, before);
  EXPECT_LE(saved, after);
  m.CheckpointFailed("save");
  EXPECT_EQ(timestamp(m), saved) << "a later failed save keeps the last good one";
}

// The kubelet probes the port Prometheus scrapes: a client that connects to it and sends nothing (a
// stuck scraper, a port scan) must not hold up /healthz or /readyz. The server would hold such a
// connection for its request timeout (10 s), far longer than the 5 s the probes are given here.
TEST(WorkerMetricsTest, ASilentClientOnTheMetricsPortDoesNotDelayTheProbes) {
  WorkerMetrics m;
  ASSERT_OK(m.Serve("127.0.0.1:0"));
  m.Available();
  const int silent = metrics::OpenSilentConnection(m.port());
  ASSERT_GE(silent, 0);
  std::string health = metrics::LoopbackHttpGet(m.port(), "/healthz", std::chrono::seconds(5));
  std::string ready = metrics::LoopbackHttpGet(m.port(), "/readyz", std::chrono::seconds(5));
  ::close(silent);
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
  EXPECT_EQ(ready.rfind("HTTP/1.1 200", 0), 0u) << ready;
}

// The operator admits only Ready pods, so a worker must turn Ready while it waits for its first
// membership, not after joining one (else a real kubelet would never admit it).
TEST(ElasticDriverTest, ReadyWhileWaitingForAMembershipThatIncludesIt) {
  const std::string dir = ::testing::TempDir() + "driver_ready." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  membership::FileSourceOptions fo;
  fo.path = dir + "/membership.json";  // never written: no membership yet
  fo.poll_interval = std::chrono::milliseconds(10);
  auto source = membership::FileMembershipSource::Start(fo);
  ASSERT_OK(source) << source.status();
  WorkerMetrics metrics;
  ElasticOptions eo;
  eo.worker_id = "w0";
  eo.secret = "s";
  eo.metrics = &metrics;
  std::string model = "m";
  ElasticState state([&] { return model; },
                     [&](std::string_view b) {
                       model = std::string(b);
                       return Status::Ok();
                     });
  ElasticDriver driver(eo, source->get(), &state);
  StatusOr<ElasticResult> result = InternalError("not run");
  std::thread run(
      [&] { result = driver.Run(1, [](const StepContext& ctx) { return StatusOr<data::SampleCursor>(ctx.cursor); }); });
  for (int i = 0; i < 500 && !metrics.ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(metrics.ready()) << "not Ready while waiting for a first membership";
  EXPECT_EQ(driver.joined_generation(), 0);
  (*source)->Stop();
  run.join();
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled) << result.status();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::elastic
