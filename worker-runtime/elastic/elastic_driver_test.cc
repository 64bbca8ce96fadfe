// The elastic driver between generations, in one process, over a test communicator (RuntimeConfig::
// communicator_factory) that stands for a backend's: each generation's communicators get the
// worker's local rank on its node (the GPU under NCCL), and a quiesce waits until the engine thread
// has left the communicator before it decides to shrink it -- as NCCL's thread, on its way out of
// an aborted wait, revokes the communicator or falls back to aborting it (which makes it
// unshrinkable), and Shrink must run alone on it.
#include "worker-runtime/elastic/elastic_driver.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "base/status_test_macros.h"
#include "base/time_format.h"
#include "worker-runtime/testing/scripted_source.h"

namespace ringmaster::elastic {
namespace {

using testing::FreePort;
using testing::ScriptedSource;

using namespace std::chrono_literals;
using comm::Communicator;
using common::DataType;
using common::ReduceOp;

// What the test communicators of one test did, and how they behave. Thread-safe.
struct Probe {
  // Behaviour.
  bool shrinkable = true;                    // can_shrink() until a blocked Alltoall leaves
  bool shrinkable_after_abort = true;        // can_shrink() once a blocked Alltoall has left
  bool ignore_abort = false;                 // a blocked Alltoall waits for Release() instead of Abort()
  std::chrono::milliseconds revoke_time{0};  // how long a blocked Alltoall stays inside after Abort()

  std::mutex mu;
  std::condition_variable cv;
  // Guarded by mu.
  struct Built {
    std::string prefix;
    int local_rank, device;  // WorldOptions' of the build
  };
  std::vector<Built> built;  // every communicator made
  int blocked = 0;           // Alltoalls inside, blocked
  bool released = false;
  int shrinks = 0;
  bool shrink_overlapped = false;  // a Shrink ran while another call was inside the same communicator

  void Release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  void WaitUntilBlocked() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return blocked > 0; });
  }
};

// Every rank of its world is a copy of this one: an allgather repeats this rank's block, a reduction
// returns its input; the driver's negotiation and restore work unchanged. Alltoall blocks, as a
// collective with a dead peer does, until Abort() (or, with probe.ignore_abort, Release()); then it
// stays inside for probe.revoke_time and leaves can_shrink() as probe.shrinkable_after_abort says.
class MirrorCommunicator : public Communicator {
 public:
  MirrorCommunicator(int rank, int size, std::shared_ptr<Probe> probe)
      : rank_(rank), size_(size), probe_(std::move(probe)), shrinkable_(probe_->shrinkable) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  comm::Backend backend() const override { return comm::Backend::kGloo; }
  comm::MemoryKind memory() const override { return comm::MemoryKind::kHost; }
  bool can_shrink() const override { return shrinkable_.load(); }
  void Abort(const std::string& reason) override {
    std::lock_guard lock(probe_->mu);
    if (broken_.ok()) broken_ = AbortedError("test communicator aborted: " + reason);
    probe_->cv.notify_all();
  }
  Status health() const override {
    std::lock_guard lock(probe_->mu);
    return broken_;
  }

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp) override {
    Inside call(this);
    Copy(in, out, count * common::DataTypeSize(type));
    return Status::Ok();
  }
  Status DoAllgather(const void* in, void* out, size_t count, DataType type) override {
    Inside call(this);
    const size_t bytes = count * common::DataTypeSize(type);
    for (int r = 0; r < size_; ++r) Copy(in, static_cast<char*>(out) + r * bytes, bytes);
    return Status::Ok();
  }
  Status DoAllgatherv(const void*, void*, const std::vector<size_t>&, DataType) override {
    return UnimplementedError("allgatherv");
  }
  Status DoBroadcast(const void* in, void* out, size_t count, DataType type, int) override {
    Inside call(this);
    Copy(in, out, count * common::DataTypeSize(type));
    return Status::Ok();
  }
  Status DoReduceScatter(const void*, void*, size_t, DataType, ReduceOp) override {
    return UnimplementedError("reduce-scatter");
  }
  Status DoAlltoall(const void*, void*, size_t, DataType) override {
    Inside call(this);
    std::unique_lock lock(probe_->mu);
    ++probe_->blocked;
    probe_->cv.notify_all();
    probe_->cv.wait(lock, [&] { return probe_->ignore_abort ? probe_->released : !broken_.ok(); });
    --probe_->blocked;
    lock.unlock();
    // NCCL's polling thread, out of its wait: revoke, or abort when revoking fails. It takes a while.
    std::this_thread::sleep_for(probe_->revoke_time);
    shrinkable_.store(probe_->shrinkable_after_abort);
    return AbortedError("test alltoall: aborted");
  }
  Status DoBarrier() override { return Status::Ok(); }
  StatusOr<std::unique_ptr<Communicator>> DoSplit(const std::vector<int>&, const std::string&) override {
    return UnimplementedError("split");
  }
  StatusOr<std::unique_ptr<Communicator>> DoShrink(const std::vector<int>& excluded, const std::string&) override {
    const bool overlapped = inside_.load() > 0;
    Inside call(this);
    {
      std::lock_guard lock(probe_->mu);
      ++probe_->shrinks;
      probe_->shrink_overlapped |= overlapped;
    }
    if (!shrinkable_.load()) return FailedPreconditionError("test communicator: aborted, cannot shrink");
    int below = 0;
    for (int r : excluded) below += r < rank_;
    return std::unique_ptr<Communicator>(
        new MirrorCommunicator(rank_ - below, size_ - static_cast<int>(excluded.size()), probe_));
  }

 private:
  // Counts a call in progress on this communicator.
  struct Inside {
    explicit Inside(MirrorCommunicator* c) : c(c) { ++c->inside_; }
    ~Inside() { --c->inside_; }
    MirrorCommunicator* c;
  };
  static void Copy(const void* in, void* out, size_t bytes) {
    if (in != nullptr && in != out) std::memmove(out, in, bytes);
  }

  const int rank_, size_;
  const std::shared_ptr<Probe> probe_;
  std::atomic<bool> shrinkable_;
  std::atomic<int> inside_{0};
  Status broken_;  // guarded by probe_->mu
};

runtime::CommunicatorFactory MirrorFactory(std::shared_ptr<Probe> probe) {
  return [probe](std::shared_ptr<store::Store>, int rank, int size,
                 const runtime::WorldOptions& wo) -> StatusOr<std::unique_ptr<Communicator>> {
    {
      std::lock_guard lock(probe->mu);
      probe->built.push_back({wo.prefix, wo.local_rank, wo.device});
    }
    return std::unique_ptr<Communicator>(new MirrorCommunicator(rank, size, probe));
  };
}

ElasticOptions Options(const std::string& id, int port, std::shared_ptr<Probe> probe,
                       std::chrono::milliseconds rebuild_timeout) {
  ElasticOptions o;
  o.worker_id = id;
  o.secret = "s";
  o.store_port = static_cast<uint16_t>(port);
  o.rebuild_timeout = rebuild_timeout;
  o.runtime.communicator_factory = MirrorFactory(std::move(probe));
  return o;
}

// Generation `gen` of `members` (pod, node) in rank order; rank 0's store at `port` coordinates.
api::Membership Record(int64_t gen, int port, const std::vector<std::pair<std::string, std::string>>& members) {
  api::Membership m;
  m.generation = gen;
  m.coordinator = "127.0.0.1:" + std::to_string(port);
  for (size_t r = 0; r < members.size(); ++r) {
    m.members.push_back(
        {members[r].first, "uid-" + members[r].first, static_cast<int32_t>(r), "127.0.0.1", members[r].second});
  }
  return m;
}

struct Worker {
  Worker(const std::string& id, int port, std::shared_ptr<Probe> probe, membership::MembershipSource* source,
         std::chrono::milliseconds rebuild_timeout = 5s)
      : state([this] { return model; },
              [this](std::string_view b) {
                model = std::string(b);
                return Status::Ok();
              }),
        driver(Options(id, port, std::move(probe), rebuild_timeout), source, &state) {}
  std::string model = "m";
  ElasticState state;
  ElasticDriver driver;
};

// The local rank (a worker's index among the members on its node) reaches RuntimeConfig::local_rank
// for every generation and moves when a worker leaves; the GPU does not move with it (the process's
// tensors live there): without RINGMASTER_DEVICE the first generation's local rank picks it for good.
TEST(ElasticDriverTest, EveryGenerationGetsTheLocalRankButTheDeviceStays) {
  auto probe = std::make_shared<Probe>();
  probe->shrinkable = false;  // every generation builds afresh, through the factory
  ScriptedSource source;
  const int port0 = FreePort(), port1 = FreePort();
  Worker w0("w0", port0, probe, &source), w1("w1", port1, probe, &source);
  source.Publish(Record(1, port0, {{"w0", "node-a"}, {"w1", "node-a"}}));
  StatusOr<bool> joined0 = InternalError("not run"), joined1 = InternalError("not run");
  {
    std::thread t0([&] {
      Status s = w0.driver.Start();
      joined0 = s.ok() ? w0.driver.Join() : StatusOr<bool>(s);
    });
    std::thread t1([&] {
      Status s = w1.driver.Start();
      joined1 = s.ok() ? w1.driver.Join() : StatusOr<bool>(s);
    });
    t0.join();
    t1.join();
  }
  ASSERT_OK(joined0) << joined0.status();
  ASSERT_OK(joined1) << joined1.status();
  ASSERT_TRUE(*joined0 && *joined1);

  // w0 leaves: w1 is alone on node-a, its local rank 0.
  source.Publish(Record(2, port1, {{"w1", "node-a"}}));
  {
    std::thread t0([&] { joined0 = w0.driver.Join(); });
    std::thread t1([&] { joined1 = w1.driver.Join(); });
    t0.join();
    t1.join();
  }
  ASSERT_OK(joined0) << joined0.status();
  EXPECT_FALSE(*joined0) << "w0 is not in generation 2";
  ASSERT_OK(joined1) << joined1.status();
  EXPECT_TRUE(*joined1);
  w0.driver.Finish();
  w1.driver.Finish();

  std::lock_guard lock(probe->mu);
  std::map<std::string, std::vector<std::pair<int, int>>> by_generation;  // "g<gen>": (local rank, device)
  for (const auto& b : probe->built) {
    by_generation[b.prefix.substr(0, b.prefix.find('.'))].push_back({b.local_rank, b.device});
  }
  std::sort(by_generation["g1"].begin(), by_generation["g1"].end());
  EXPECT_EQ(by_generation["g1"], (std::vector<std::pair<int, int>>{{0, -1}, {1, -1}}))
      << "the first generation: each local rank picks the device (-1: by local rank)";
  EXPECT_EQ(by_generation["g2"], (std::vector<std::pair<int, int>>{{0, 1}}))
      << "w1's local rank is now 0, but it stays on device 1";
}

// The program stops while a collective is still inside the communicator (it saw Superseded(), or
// another collective failed): the driver aborts the runtime, and what the engine thread does on its
// way out (NCCL: revoke, or abort when revoking fails) decides whether the communicator can shrink.
// The decision must see that final state, and Shrink must never run beside the collective.
class QuiesceTest : public ::testing::TestWithParam<bool> {};

TEST_P(QuiesceTest, WaitsForTheEngineToLeaveTheCommunicatorBeforeDecidingToShrink) {
  const bool shrinkable_after_abort = GetParam();
  auto probe = std::make_shared<Probe>();
  probe->shrinkable_after_abort = shrinkable_after_abort;
  probe->revoke_time = 300ms;  // the driver rebuilds in less: without a wait it would shrink too early
  ScriptedSource source;
  const int port = FreePort();
  Worker w("w0", port, probe, &source);
  source.Publish(Record(1, port, {{"w0", "node-a"}, {"gone", "node-b"}}));  // "gone" exists in mirror only
  ASSERT_OK(w.driver.Start());
  auto joined = w.driver.Join();
  ASSERT_OK(joined) << joined.status();
  ASSERT_TRUE(*joined);

  float in[2] = {1, 2}, out[2] = {};
  fusion::Handle step = w.driver.Context().rt->AlltoallAsync("step", in, out, 1, DataType::kFloat32);
  probe->WaitUntilBlocked();
  w.driver.Interrupted(AbortedError("the step's collective is late: the program stops"));
  source.Publish(Record(2, port, {{"w0", "node-a"}}));  // only a removal: shrink if the communicator can
  joined = w.driver.Join();
  ASSERT_OK(joined) << joined.status();
  EXPECT_TRUE(*joined);
  EXPECT_EQ(step.Wait().code(), StatusCode::kAborted);
  w.driver.Finish();

  std::lock_guard lock(probe->mu);
  EXPECT_FALSE(probe->shrink_overlapped) << "Shrink ran while the engine thread was inside the communicator";
  EXPECT_EQ(w.driver.last_rebuild().shrunk, shrinkable_after_abort)
      << "the shrink decision did not see the communicator's final state";
  EXPECT_EQ(probe->shrinks, shrinkable_after_abort ? 1 : 0);
}

INSTANTIATE_TEST_SUITE_P(FinalState, QuiesceTest, ::testing::Bool(), [](const auto& info) {
  return info.param ? std::string("RevokedStaysShrinkable") : std::string("AbortedCannotShrink");
});

// An engine thread that does not come out of the communicator after the abort (a call that ignores
// it) is reported, within a bound, and its communicator is never shrunk.
TEST(ElasticDriverTest, AnEngineThatDoesNotLeaveTheCommunicatorIsAnErrorNotAShrink) {
  auto probe = std::make_shared<Probe>();
  probe->ignore_abort = true;
  ScriptedSource source;
  const int port = FreePort();
  // Quiesce waits 2 x rebuild_timeout for the engine thread.
  auto worker = std::make_unique<Worker>("w0", port, probe, &source, 250ms);
  ElasticDriver& driver = worker->driver;
  source.Publish(Record(1, port, {{"w0", "node-a"}}));
  ASSERT_OK(driver.Start());
  auto joined = driver.Join();
  ASSERT_OK(joined) << joined.status();

  float in[1] = {1}, out[1] = {};
  fusion::Handle step = driver.Context().rt->AlltoallAsync("step", in, out, 1, DataType::kFloat32);
  probe->WaitUntilBlocked();
  driver.Interrupted(AbortedError("the program stops"));
  // A driver that does not wait for the engine may instead block destroying the stuck runtime: give
  // the communicator back after a generous while so that such a failure is reported, not a hang.
  auto rejoined = std::async(std::launch::async, [&] { return driver.Join(); });
  if (rejoined.wait_for(30s) != std::future_status::ready) ADD_FAILURE() << "Join blocked on the stuck engine";
  probe->Release();
  joined = rejoined.get();
  EXPECT_EQ(step.Wait().code(), StatusCode::kAborted);
  ASSERT_FALSE(joined.ok()) << "rebuilt while the engine thread was still inside the old communicator";
  EXPECT_EQ(joined.status().code(), StatusCode::kInternal) << joined.status();
  EXPECT_NE(joined.status().message().find("process set 'world'"), std::string::npos) << joined.status();
  EXPECT_NE(joined.status().message().find("still inside"), std::string::npos) << joined.status();
  EXPECT_EQ(driver.Join().status().code(), StatusCode::kInternal) << "the error is not kept";
  driver.Finish();
  worker.reset();  // joins the engine thread, which has left by now
  std::lock_guard lock(probe->mu);
  EXPECT_EQ(probe->shrinks, 0);
}

// Telemetry never stops training: a timeline whose folder is missing gets the folder; one that cannot be opened
// at all (its folder would lie under a regular file) is one warning naming RINGMASTER_TIMELINE, and the worker
// joins and trains (it once abandoned every generation, "cannot open timeline", until the run's deadline).
TEST(ElasticDriverTest, ATimelineThatCannotBeOpenedIsAWarningNotAFailedBuild) {
  const std::string dir = ::testing::TempDir() + "timeline-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a-file") << "x";
  for (const auto& [path, opens] : std::vector<std::pair<std::string, bool>>{
           {dir + "/not-yet/timeline.json", true}, {dir + "/a-file/sub/timeline.json", false}}) {
    auto probe = std::make_shared<Probe>();
    ScriptedSource source;
    const int port = FreePort();
    std::string model = "m";
    ElasticState state([&] { return model; },
                       [&](std::string_view b) {
                         model = std::string(b);
                         return Status::Ok();
                       });
    ElasticOptions o = Options("w0", port, probe, 5s);
    o.runtime.timeline_path = path;
    std::mutex mu;
    std::vector<std::string> warnings;
    o.log = [&](LogLevel level, std::string_view line) {
      std::lock_guard lock(mu);
      if (level == LogLevel::kWarning) warnings.emplace_back(line);
    };
    ElasticDriver driver(o, &source, &state);
    source.Publish(Record(1, port, {{"w0", "node-a"}}));
    ASSERT_OK(driver.Start());
    auto joined = driver.Join();
    ASSERT_OK(joined) << path << ": " << joined.status();
    EXPECT_TRUE(*joined);
    driver.Interrupted(AbortedError("again"));
    source.Publish(Record(2, port, {{"w0", "node-a"}}));
    joined = driver.Join();
    ASSERT_OK(joined) << path << ": " << joined.status();
    driver.Finish();
    std::lock_guard lock(mu);
    if (opens) {
      EXPECT_TRUE(std::filesystem::exists(path)) << path;
      EXPECT_TRUE(warnings.empty()) << warnings.front();
    } else {
      ASSERT_EQ(warnings.size(), 1u) << "one warning, not one per build";
      EXPECT_NE(warnings[0].find("RINGMASTER_TIMELINE"), std::string::npos) << warnings[0];
      EXPECT_NE(warnings[0].find("training goes on without a timeline"), std::string::npos) << warnings[0];
    }
  }
  std::filesystem::remove_all(dir);
}

// A source that records the progress reports it is given (and refuses them while `refuse` is set).
class RecordingSource : public ScriptedSource {
 public:
  Status ReportProgress(const api::ProgressReport& report) override {
    std::lock_guard lock(mu_);
    reports_.push_back(report);
    cv_.notify_all();
    return refuse ? UnavailableError("the apiserver is away") : Status::Ok();
  }
  // The reports so far once there are `n` (within 5 s).
  std::vector<api::ProgressReport> WaitFor(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 5s, [&] { return reports_.size() >= n; });
    return reports_;
  }
  std::atomic<bool> refuse{false};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<api::ProgressReport> reports_;
};

// Rank 0 reports each generation once, at its first committed step: where the state came from, the step it
// resumed at, its rebuild and restore time, and the previous generation's mean step time. A refused report is
// one warning; training goes on.
TEST(ElasticDriverTest, RankZeroReportsEachGenerationsProgressOnceAtItsFirstStep) {
  auto probe = std::make_shared<Probe>();
  probe->shrinkable = false;
  RecordingSource source;
  const int port = FreePort();
  std::mutex log_mu;
  std::vector<std::string> warnings;
  ElasticOptions options = Options("w0", port, probe, 5s);
  options.log = [&](LogLevel level, std::string_view line) {
    std::lock_guard lock(log_mu);
    if (level == LogLevel::kWarning) warnings.emplace_back(line);
  };
  std::string model = "m";
  ElasticState state([&] { return model; },
                     [&](std::string_view b) {
                       model = std::string(b);
                       return Status::Ok();
                     });
  ElasticDriver driver(options, &source, &state);
  source.Publish(Record(1, port, {{"w0", "node-a"}}));
  const auto before = std::chrono::system_clock::now();
  ASSERT_OK(driver.Start());
  auto joined = driver.Join();
  ASSERT_OK(joined) << joined.status();
  ASSERT_TRUE(*joined);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(20ms);
    ASSERT_OK(driver.Commit(driver.Context().cursor));
  }
  auto reports = source.WaitFor(1);
  ASSERT_EQ(reports.size(), 1u);
  const api::ProgressReport first = reports[0];
  EXPECT_EQ(first.generation, 1);
  EXPECT_EQ(first.reporter, "w0");
  EXPECT_EQ(first.world_size, 1);
  EXPECT_EQ(first.first_step, 1);
  EXPECT_EQ(first.resumed_from, 0);
  EXPECT_EQ(first.restored_from, api::restored_from::kInitial) << "no checkpoint, nobody kept any state";
  EXPECT_EQ(first.replayed_steps, 0);
  EXPECT_GE(first.rebuild_seconds, 0);
  EXPECT_LT(first.rebuild_seconds, 5);
  EXPECT_GE(first.restore_seconds, 0);
  EXPECT_GE(first.step_seconds, 0.015) << "no previous generation: its own first step's time";
  auto at = ParseRfc3339(first.first_step_at);
  ASSERT_TRUE(at) << first.first_step_at;
  EXPECT_GE(*at, std::chrono::time_point_cast<std::chrono::milliseconds>(before));
  EXPECT_NE(first.first_step_at.find('.'), std::string::npos) << "milliseconds: " << first.first_step_at;

  // Step 3 is agreed before the change (what SwitchDue does at an orderly change's boundary): the rebuild keeps it.
  ASSERT_OK(driver.AgreeOnLast());
  // Generation 2 (a member joins, mirrored): the survivor keeps its state; the report, refused, is one warning.
  source.refuse = true;
  source.Publish(Record(2, port, {{"w0", "node-a"}, {"mirror", "node-b"}}));
  for (int i = 0; i < 500 && !driver.Superseded(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(driver.Superseded());
  joined = driver.Join();
  ASSERT_OK(joined) << joined.status();
  ASSERT_TRUE(*joined);
  ASSERT_OK(driver.Commit(driver.Context().cursor));
  ASSERT_OK(driver.Commit(driver.Context().cursor));
  reports = source.WaitFor(2);
  ASSERT_EQ(reports.size(), 2u) << "one report per generation";
  const api::ProgressReport second = reports[1];
  EXPECT_EQ(second.generation, 2);
  EXPECT_EQ(second.world_size, 2);
  EXPECT_EQ(second.resumed_from, 3);
  EXPECT_EQ(second.first_step, 4);
  EXPECT_EQ(second.restored_from, api::restored_from::kPeer);
  EXPECT_EQ(second.replayed_steps, 0);
  EXPECT_GE(second.step_seconds, 0.015) << "generation 1's mean step (20 ms apart)";
  EXPECT_LT(second.step_seconds, 1.0);
  driver.Finish();  // waits for the report being sent
  std::lock_guard lock(log_mu);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("progress report of generation 2"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("training goes on"), std::string::npos) << warnings[0];
  EXPECT_EQ(state.committed_step(), 5) << "training went on";
}

// Communicators that meet through the store as Gloo's do (gloo_connect.h): each rank publishes
// "<prefix>/here/<rank>" and waits, up to the world's timeout, for every other rank's; then it mirrors.
// Records each build's prefix in `probe`.
runtime::CommunicatorFactory MeetingFactory(std::shared_ptr<Probe> probe) {
  return [probe](std::shared_ptr<store::Store> store, int rank, int size,
                 const runtime::WorldOptions& wo) -> StatusOr<std::unique_ptr<Communicator>> {
    const std::string here = wo.prefix + "/here/";
    RINGMASTER_RETURN_IF_ERROR(store->Set(here + std::to_string(rank), "x"));
    std::vector<std::string> others;
    for (int r = 0; r < size; ++r)
      if (r != rank) others.push_back(here + std::to_string(r));
    if (Status met = store->Wait(others, wo.timeout); !met.ok())
      return AbortedError("meeting the other ranks under '" + wo.prefix + "': " + met.ToString());
    {
      std::lock_guard lock(probe->mu);
      probe->built.push_back({wo.prefix, wo.local_rank, wo.device});
    }
    return std::unique_ptr<Communicator>(new MirrorCommunicator(rank, size, probe));
  };
}

// A worker whose communicators meet through the store, with its log lines kept.
struct MeetingWorker {
  MeetingWorker(const std::string& id, int port, membership::MembershipSource* source,
                std::chrono::milliseconds rebuild_timeout)
      : state([this] { return model; },
              [this](std::string_view b) {
                model = std::string(b);
                return Status::Ok();
              }),
        driver(MeetingOptions(id, port, rebuild_timeout), source, &state) {}

  ElasticOptions MeetingOptions(const std::string& id, int port, std::chrono::milliseconds rebuild_timeout) {
    ElasticOptions o = Options(id, port, probe, rebuild_timeout);
    o.runtime.communicator_factory = MeetingFactory(probe);
    o.log = [this](LogLevel, std::string_view line) {
      std::lock_guard lock(mu);
      lines.emplace_back(line);
      cv.notify_all();
    };
    return o;
  }
  // Whether a log line containing `text` came within `timeout`.
  bool WaitForLine(const std::string& text, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] {
      return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != l.npos; });
    });
  }
  // The prefixes of the communicators built for generation `gen` ("g<gen>.<attempt>/...").
  std::vector<std::string> Built(int64_t gen) {
    std::lock_guard lock(probe->mu);
    std::vector<std::string> out;
    for (const auto& b : probe->built)
      if (b.prefix.rfind("g" + std::to_string(gen) + ".", 0) == 0) out.push_back(b.prefix);
    return out;
  }
  std::string Log() {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : lines) out += "  " + l + "\n";
    return out;
  }

  std::shared_ptr<Probe> probe = std::make_shared<Probe>();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;  // guarded by mu
  std::string model = "m";
  ElasticState state;
  ElasticDriver driver;
};

// A newcomer builds its first generation at once while rank 0, a survivor, is busy elsewhere for longer than the
// rebuild timeout (in the e2e test EtcdDownPastTheRebuildTimeoutWithAWorkerKilledMeanwhile: still on the previous
// generation when etcd came back). The newcomer gives that attempt up and moves on to the next; rank 0, arriving
// late, must meet it there. It used to build the abandoned attempt instead (finding the newcomer's stale key
// there), fail it, and move on -- while the newcomer, now one attempt ahead, was refused "store has not reached
// generation" until its deadline, failed, and moved one further: the two never met.
TEST(ElasticDriverTest, ARankZeroThatArrivesAfterANewcomerGaveUpAnAttemptMeetsItAtItsNextOne) {
  ScriptedSource source;
  const int port0 = FreePort(), port1 = FreePort();
  MeetingWorker w0("w0", port0, &source, 1s), w1("w1", port1, &source, 1s);
  source.Publish(Record(1, port0, {{"w0", "node-a"}}));
  ASSERT_OK(w0.driver.Start());
  auto joined0 = w0.driver.Join();
  ASSERT_OK(joined0) << joined0.status();
  ASSERT_TRUE(*joined0);

  // Generation 2 adds w1. w0's watcher sees it (its store opens generation 2's first attempt), but w0 does not
  // rebuild yet: it stands for a survivor still busy elsewhere.
  source.Publish(Record(2, port0, {{"w0", "node-a"}, {"w1", "node-b"}}));
  for (int i = 0; i < 500 && !w0.driver.Superseded(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(w0.driver.Superseded());
  auto newcomer = std::async(std::launch::async, [&]() -> StatusOr<bool> {
    RINGMASTER_RETURN_IF_ERROR(w1.driver.Start());
    return w1.driver.Join();
  });
  // The newcomer gave up the first attempt (rank 0 never came) and is about to build the next one.
  ASSERT_TRUE(w1.WaitForLine("building it again", 30s)) << w1.Log();
  EXPECT_TRUE(w1.Built(2).empty()) << w1.Log();

  // Rank 0 arrives.
  auto survivor = std::async(std::launch::async, [&] { return w0.driver.Join(); });
  const bool met =
      newcomer.wait_for(60s) == std::future_status::ready && survivor.wait_for(60s) == std::future_status::ready;
  if (!met) source.Stop();  // ends the chase: both Joins return Cancelled
  joined0 = survivor.get();
  auto joined1 = newcomer.get();
  ASSERT_TRUE(met) << "the two never met\nw0:\n" << w0.Log() << "w1:\n" << w1.Log();
  ASSERT_OK(joined0) << joined0.status() << "\nw0:\n" << w0.Log() << "w1:\n" << w1.Log();
  ASSERT_OK(joined1) << joined1.status() << "\nw0:\n" << w0.Log() << "w1:\n" << w1.Log();
  EXPECT_TRUE(*joined0 && *joined1);
  const std::vector<std::string> built0 = w0.Built(2), built1 = w1.Built(2);
  ASSERT_FALSE(built0.empty());
  ASSERT_FALSE(built1.empty());
  EXPECT_EQ(built0.back(), built1.back()) << "built different attempts\nw0:\n" << w0.Log() << "w1:\n" << w1.Log();
  EXPECT_EQ(built0.back().rfind("g2.0/", 0), std::string::npos)
      << "rank 0 built the attempt the newcomer had given up: " << built0.back();
  w0.driver.Finish();
  w1.driver.Finish();
}

// The runtime's own guard: its world communicator is shrunk only after Quiesce() has joined its
// engine threads, and only for a local rank on the same GPU.
// A communicator factory whose first `failures` builds fail with `error`, then builds mirrors; counts its calls.
runtime::CommunicatorFactory FailingFactory(std::shared_ptr<Probe> probe, Status error, int failures,
                                            std::shared_ptr<std::atomic<int>> calls) {
  return [probe, error, failures, calls](std::shared_ptr<store::Store>, int rank, int size,
                                         const runtime::WorldOptions&) -> StatusOr<std::unique_ptr<Communicator>> {
    if (calls->fetch_add(1) < failures) return error;
    return std::unique_ptr<Communicator>(new MirrorCommunicator(rank, size, probe));
  };
}

// Join over a factory that fails as `error`: returns Join's result, or nullopt when it had not returned after
// `patience` (then a record without the worker releases it: it leaves).
std::optional<StatusOr<bool>> JoinWithFactoryFailing(Status error, int failures,
                                                     std::shared_ptr<std::atomic<int>> calls,
                                                     std::chrono::milliseconds patience) {
  auto probe = std::make_shared<Probe>();
  ScriptedSource source;
  const int port = FreePort();
  ElasticOptions o = Options("w0", port, probe, 500ms);  // a retry waits 250 ms for a newer record
  o.runtime.communicator_factory = FailingFactory(probe, std::move(error), failures, std::move(calls));
  ElasticState state([] { return std::string("m"); }, [](std::string_view) { return Status::Ok(); });
  ElasticDriver driver(std::move(o), &source, &state);
  source.Publish(Record(1, port, {{"w0", "node-a"}}));
  EXPECT_OK(driver.Start());
  auto joined = std::async(std::launch::async, [&] { return driver.Join(); });
  std::optional<StatusOr<bool>> result;
  if (joined.wait_for(patience) == std::future_status::ready) {
    result = joined.get();
  } else {
    source.Publish(Record(2, port, {{"other", "node-b"}}));  // w0 is no longer a member: Join returns
    (void)joined.get();
  }
  driver.Finish();
  return result;
}

// What no rebuild repairs (a GPU library that cannot be loaded, a refused configuration: failure_class.h) ends
// Join at once with the build's error: every build of the generation would fail the same way. A membership
// failure (Unavailable: a peer's store went away) is built again.
TEST(ElasticDriverTest, ABuildThatFailsWithWhatNoRebuildRepairsEndsJoinAtOnce) {
  for (Status error : {FailedPreconditionError("no NCCL library could be loaded"),
                       NotFoundError("no CUDA runtime library could be loaded"),
                       DataLossError("GPU 0: cudaErrorIllegalAddress (a sticky CUDA error)")}) {
    auto calls = std::make_shared<std::atomic<int>>(0);
    const auto t = std::chrono::steady_clock::now();
    auto joined = JoinWithFactoryFailing(error, 1000, calls, 3s);
    ASSERT_TRUE(joined.has_value()) << error << ": Join was still building again after 3 s (" << calls->load()
                                    << " builds)";
    ASSERT_FALSE(joined->ok()) << error;
    EXPECT_EQ(joined->status().code(), error.code()) << joined->status();
    EXPECT_NE(joined->status().message().find(error.message()), std::string::npos) << joined->status();
    EXPECT_EQ(calls->load(), 1) << "built " << calls->load() << " times";
    EXPECT_LT(std::chrono::steady_clock::now() - t, 2s);
  }
}

TEST(ElasticDriverTest, ABuildThatFailsWithAMembershipFailureIsBuiltAgain) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto joined = JoinWithFactoryFailing(UnavailableError("a peer's store went away"), 1, calls, 10s);
  ASSERT_TRUE(joined.has_value());
  ASSERT_OK(*joined) << joined->status();
  EXPECT_TRUE(**joined);
  EXPECT_EQ(calls->load(), 2) << "the failed build was not built again";
}

TEST(RuntimeQuiesceTest, ShrinkingNeedsAQuiescedParent) {
  auto probe = std::make_shared<Probe>();
  runtime::RuntimeConfig config;
  config.communicator_factory = MirrorFactory(probe);
  auto parent = runtime::Runtime::Create(config, nullptr, 0, 3);
  ASSERT_OK(parent) << parent.status();
  EXPECT_FALSE((*parent)->CanShrink()) << "shrinkable while its engine may still be inside";
  auto early = runtime::Runtime::CreateByShrinking(config, nullptr, **parent, {1});
  EXPECT_EQ(early.status().code(), StatusCode::kFailedPrecondition) << early.status();
  ASSERT_OK((*parent)->Quiesce("test", 5s));
  EXPECT_TRUE((*parent)->CanShrink());
  auto shrunk = runtime::Runtime::CreateByShrinking(config, nullptr, **parent, {1});
  ASSERT_OK(shrunk) << shrunk.status();
  EXPECT_EQ((*shrunk)->size(), 2);
  float x = 1;
  EXPECT_EQ((*parent)->Allreduce("late", &x, &x, 1, DataType::kFloat32, ReduceOp::kSum).code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace ringmaster::elastic
