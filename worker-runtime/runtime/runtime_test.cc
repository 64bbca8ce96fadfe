// The runtime end to end on forked ranks: async handles, tensor fusion (1,000
// small tensors, fused == unfused == reference), order-mismatch detection,
// static/dynamic/overlapping process sets, groups built by their members,
// point-to-point, the timeline, and a killed peer.
#include "worker-runtime/runtime/runtime.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "worker-runtime/common/pattern.h"
#include "worker-runtime/runtime/world.h"
#include "worker-runtime/testing/forwarding_communicator.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::runtime {
namespace {

using namespace std::chrono_literals;

RuntimeConfig GlooConfig() {
  RuntimeConfig c;
  c.backend = comm::Backend::kGloo;
  c.timeout = 20s;
  return c;
}

std::unique_ptr<Runtime> MakeRuntime(RankContext& ctx, const RuntimeConfig& config) {
  auto rt = Runtime::Create(config, ctx.store, ctx.rank, ctx.size);
  EXPECT_OK(rt) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

void ExpectAllRanksOk(const std::vector<RankOutcome>& outcomes) {
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << DescribeFailures(outcomes);
}

std::string TempPath(const std::string& stem) {
  return ::testing::TempDir() + "/" + stem + "-" + std::to_string(::getpid()) + "-{rank}.json";
}

// 1,000 small tensors of mixed sizes, types and ops, all in flight at once.
struct SmallTensors {
  std::vector<std::vector<uint8_t>> in, out;
  std::vector<common::DataType> types;
  std::vector<common::ReduceOp> ops;
  std::vector<size_t> counts;

  SmallTensors(int rank, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      common::DataType t = i % 7 == 3   ? common::DataType::kBFloat16
                           : i % 5 == 1 ? common::DataType::kInt32
                                        : common::DataType::kFloat32;
      common::ReduceOp op = i % 11 == 4   ? common::ReduceOp::kMax
                            : i % 13 == 6 ? common::ReduceOp::kAvg
                                          : common::ReduceOp::kSum;
      size_t count = 1 + (i * 37) % 1024;  // about 2 KiB on average, at most 4 KiB
      types.push_back(t);
      ops.push_back(op);
      counts.push_back(count);
      in.push_back(common::MakeInput(t, op, rank, count, i));
      out.emplace_back(in.back().size(), 0);
    }
  }
  void Submit(Runtime& rt, std::vector<fusion::Handle>& handles) {
    for (size_t i = 0; i < in.size(); ++i) {
      handles.push_back(
          rt.AllreduceAsync("t" + std::to_string(i), in[i].data(), out[i].data(), counts[i], types[i], ops[i]));
    }
  }
};

size_t CountEvents(const std::string& path, const std::string& phase, const std::string& detail_substr) {
  std::ifstream f(path);
  auto events = nlohmann::json::parse(f);
  size_t n = 0;
  for (const auto& e : events) {
    if (e["name"] == phase && e["args"].value("detail", "").find(detail_substr) != std::string::npos) ++n;
  }
  return n;
}

TEST(RuntimeTest, ThousandSmallFusedTensorsMatchUnfusedAndReference) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  const std::string timeline = TempPath("fused");
  auto outcomes = runtime_testing::RunWorld(options, [&](RankContext& ctx) {
    const size_t n = 1000;
    std::vector<std::vector<uint8_t>> results[2];
    for (int fused = 1; fused >= 0; --fused) {
      RuntimeConfig config = GlooConfig();
      config.name = fused ? "fused" : "unfused";
      config.fusion_threshold_bytes = fused ? (64u << 20) : 0;
      if (fused) config.timeline_path = timeline;
      auto rt = MakeRuntime(ctx, config);
      ASSERT_NE(rt, nullptr);
      SmallTensors tensors(ctx.rank, n);
      std::vector<fusion::Handle> handles;
      tensors.Submit(*rt, handles);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_OK(handles[i].Wait(30s));
        EXPECT_TRUE(handles[i].Poll());
        auto want = common::ReferenceReduce(tensors.types[i], tensors.ops[i], ctx.size, tensors.counts[i], i);
        ASSERT_EQ(tensors.out[i], want) << "tensor " << i << (fused ? " fused" : " unfused");
      }
      results[fused] = std::move(tensors.out);
    }
    EXPECT_EQ(results[0], results[1]);
    // The timeline shows that fusion really happened (and is valid JSON).
    std::string path = timeline;
    path.replace(path.find("{rank}"), 6, std::to_string(ctx.rank));
    EXPECT_GT(CountEvents(path, "RUN", "fused"), 0u);
    EXPECT_GE(CountEvents(path, "QUEUE", ""), n);
  });
  ExpectAllRanksOk(outcomes);
}

// The configuration a pod is given, parsed as the programs parse it at start, is what the
// runtime does: the fusion threshold decides how many launches eight small allreduces take.
fusion::EngineStats LaunchesForEightSmallAllreduces(const std::string& fusion_threshold) {
  auto config = ParseRuntimeConfig({{std::string(api::env::kBackend), "gloo"},
                                    {std::string(api::env::kFusionThresholdBytes), fusion_threshold},
                                    {std::string(api::env::kCycleTimeMs), "100"}});
  EXPECT_OK(config);
  if (!config.ok()) return {};
  const std::string report =
      ::testing::TempDir() + "/launches-" + std::to_string(::getpid()) + "-" + fusion_threshold + ".txt";
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [&](RankContext& ctx) {
    auto rt = MakeRuntime(ctx, *config);
    ASSERT_NE(rt, nullptr);
    std::vector<std::vector<float>> tensors(8, std::vector<float>(256, 1.0f));
    std::vector<fusion::Handle> handles;
    for (size_t i = 0; i < tensors.size(); ++i) {
      handles.push_back(rt->AllreduceAsync("t" + std::to_string(i), tensors[i].data(), tensors[i].data(), 256,
                                           common::DataType::kFloat32, common::ReduceOp::kSum));
    }
    for (auto& h : handles) ASSERT_OK(h.Wait());
    for (const auto& t : tensors) ASSERT_EQ(t, std::vector<float>(256, 2.0f));
    auto stats = rt->Stats();
    ASSERT_OK(stats);
    if (ctx.rank == 0) std::ofstream(report) << stats->launches << " " << stats->fused_launches << "\n";
  });
  ExpectAllRanksOk(outcomes);
  fusion::EngineStats stats;
  std::ifstream(report) >> stats.launches >> stats.fused_launches;
  std::remove(report.c_str());
  return stats;
}

TEST(RuntimeTest, FusionThresholdFromTheEnvironmentChangesTheNumberOfLaunches) {
  const fusion::EngineStats off = LaunchesForEightSmallAllreduces("0");
  EXPECT_EQ(off.launches, 8u);
  EXPECT_EQ(off.fused_launches, 0u);
  // 8 x 1 KiB, all submitted within one 100 ms cycle, under a 1 MiB threshold: fused.
  const fusion::EngineStats on = LaunchesForEightSmallAllreduces("1048576");
  EXPECT_GE(on.fused_launches, 1u);
  EXPECT_LT(on.launches, 8u);
}

// The cycle lets requests accumulate for fusion, but a caller that waits for one submits nothing more until
// it has the result: the wait starts the cycle (fusion/engine.h). With a cycle of an hour, a synchronous
// allreduce and a RunOnHost (the elastic restore) finish at once, and requests queued before the wait still
// fuse into one launch. (Without the wake every Wait below would end DeadlineExceeded.)
TEST(RuntimeTest, WaitingForACollectiveStartsTheCycle) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    RuntimeConfig config = GlooConfig();
    config.cycle_time = std::chrono::hours(1);
    auto rt = MakeRuntime(ctx, config);
    ASSERT_NE(rt, nullptr);
    std::vector<float> x(64, 1.0f);
    ASSERT_OK(
        rt->AllreduceAsync("sync", x.data(), x.data(), x.size(), common::DataType::kFloat32, common::ReduceOp::kSum)
            .Wait(60s));
    EXPECT_EQ(x[0], 3.0f);
    int64_t ranks_seen = 0;
    ASSERT_OK(rt->RunOnHost("task", [&](comm::Communicator& host) {
      int64_t one = 1;
      Status s = host.Allreduce(&one, &ranks_seen, 1, common::DataType::kInt64, common::ReduceOp::kSum);
      return s;
    }));
    EXPECT_EQ(ranks_seen, 3);
    constexpr int kQueued = 5;
    std::vector<std::vector<float>> t(kQueued, std::vector<float>(16, 2.0f));
    std::vector<fusion::Handle> hs;
    for (int i = 0; i < kQueued; ++i) {
      hs.push_back(rt->AllreduceAsync("q" + std::to_string(i), t[i].data(), t[i].data(), t[i].size(),
                                      common::DataType::kFloat32, common::ReduceOp::kSum));
    }
    for (auto& h : hs) ASSERT_OK(h.Wait(60s));
    for (const auto& v : t) EXPECT_EQ(v, std::vector<float>(16, 6.0f));
    auto stats = rt->Stats();
    ASSERT_OK(stats);
    // "sync" alone, then the five queued ones fused into one launch (the task is no launch).
    EXPECT_EQ(stats->launches, 2u);
    EXPECT_EQ(stats->fused_requests, static_cast<uint64_t>(kQueued));
  });
  ExpectAllRanksOk(outcomes);
}

// A fence whose work "finishes" when the test opens it; counts how it was waited for.
class GateFence : public comm::ReadyFence {
 public:
  Status Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    ++waits_;
    cv_.wait(lock, [this] { return open_; });
    return Status::Ok();
  }
  Status OrderStream(void*) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++stream_orders_;
    return Status::Ok();
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }
  int stream_orders() {
    std::lock_guard<std::mutex> lock(mu_);
    return stream_orders_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waits_ = 0, stream_orders_ = 0;
};

// A collective whose input a device stream produces (Request::ready) runs after it: on a host communicator the
// engine's thread waits for the fence, never the submitting thread, and the result holds the input written
// before the fence opened.
TEST(RuntimeTest, ACollectiveRunsAfterTheFenceOfItsInputNotBeforeAndTheCallerNeverWaitsForIt) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = MakeRuntime(ctx, GlooConfig());
    ASSERT_NE(rt, nullptr);
    std::vector<float> x(256, 0.0f);
    auto fence = std::make_shared<GateFence>();
    fusion::Handle h = rt->AllreduceAsync("fenced", x.data(), x.data(), x.size(), common::DataType::kFloat32,
                                          common::ReduceOp::kSum, kWorldSet, fence);
    // Submitting returned with the fence shut; the collective cannot have run.
    EXPECT_EQ(h.Wait(300ms).code(), StatusCode::kDeadlineExceeded) << "ran before its input was ready";
    std::fill(x.begin(), x.end(), static_cast<float>(ctx.rank + 1));  // the "kernel" that produces the input
    fence->Open();
    ASSERT_OK(h.Wait(60s));
    EXPECT_EQ(x, std::vector<float>(256, 3.0f));
    EXPECT_EQ(fence->waits(), 1) << "Gloo has no stream: the engine's thread waits";
    EXPECT_EQ(fence->stream_orders(), 0);
  });
  ExpectAllRanksOk(outcomes);
}

// Horovod's negotiation: ranks that submit the same named collectives in different orders (TensorFlow runs
// a graph's independent ops in any order) get them matched by name, each with the right result.
TEST(RuntimeTest, DifferentSubmissionOrdersAreMatchedByName) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = MakeRuntime(ctx, GlooConfig());
    ASSERT_NE(rt, nullptr);
    constexpr int kTensors = 6;
    std::vector<std::vector<float>> data(kTensors);
    std::vector<int> order(kTensors);
    for (int i = 0; i < kTensors; ++i) {
      data[i].assign(16 + i, static_cast<float>(i + 1));
      order[i] = i;
    }
    // Rank 0 in order, rank 1 reversed, rank 2 rotated by two.
    if (ctx.rank == 1) std::reverse(order.begin(), order.end());
    if (ctx.rank == 2) std::rotate(order.begin(), order.begin() + 2, order.end());
    std::vector<fusion::Handle> hs;
    for (int i : order) {
      hs.push_back(rt->AllreduceAsync("t" + std::to_string(i), data[i].data(), data[i].data(), data[i].size(),
                                      common::DataType::kFloat32, common::ReduceOp::kSum));
      std::this_thread::sleep_for(1ms);  // spread the submissions over cycles
    }
    for (auto& h : hs) ASSERT_OK(h.Wait(20s));
    for (int i = 0; i < kTensors; ++i) {
      EXPECT_EQ(data[i].front(), 3.0f * static_cast<float>(i + 1)) << "tensor t" << i;
      EXPECT_EQ(data[i].back(), 3.0f * static_cast<float>(i + 1)) << "tensor t" << i;
    }
  });
  ExpectAllRanksOk(outcomes);
}

TEST(RuntimeTest, OneNameForDifferentCollectivesIsAnErrorNotADeadlock) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = MakeRuntime(ctx, GlooConfig());
    ASSERT_NE(rt, nullptr);
    // "a" is 16 floats on rank 0 and 8 on rank 1; "b" comes first on rank 1, so the ranks match by name.
    std::vector<float> a(ctx.rank == 0 ? 16 : 8, 1), b(4, 2);
    std::vector<fusion::Handle> hs;
    auto submit = [&](const char* name, std::vector<float>& v) {
      hs.push_back(
          rt->AllreduceAsync(name, v.data(), v.data(), v.size(), common::DataType::kFloat32, common::ReduceOp::kSum));
    };
    if (ctx.rank == 0) {
      submit("a", a);
      submit("b", b);
    } else {
      submit("b", b);
      submit("a", a);
    }
    Status sa = hs[ctx.rank == 0 ? 0 : 1].Wait(20s);
    EXPECT_EQ(sa.code(), StatusCode::kFailedPrecondition) << sa;
    EXPECT_NE(sa.message().find("mismatch"), std::string::npos) << sa;
    // "b" is the same collective everywhere: it runs (alone, or beside "a" once "a" fails).
    Status sb = hs[ctx.rank == 0 ? 1 : 0].Wait(20s);
    if (sb.ok()) {
      EXPECT_EQ(b[0], 4.0f);
    } else {
      EXPECT_EQ(sb.code(), StatusCode::kFailedPrecondition) << sb;
    }
    // The runtime stays usable.
    std::vector<float> c(8, 1);
    ASSERT_OK(rt->Allreduce("c", c.data(), c.data(), c.size(), common::DataType::kFloat32, common::ReduceOp::kSum));
    EXPECT_EQ(c[0], 2.0f);
  });
  ExpectAllRanksOk(outcomes);
}

float SumOfMembers(const std::vector<int>& ranks) {
  float s = 0;
  for (int r : ranks) s += static_cast<float>(r + 1);
  return s;
}

TEST(RuntimeTest, StaticDynamicAndOverlappingProcessSets) {
  runtime_testing::WorldOptions options;
  options.size = 4;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    RuntimeConfig config = GlooConfig();
    config.process_sets = {{0, 2}, {1, 2, 3}};  // overlapping on rank 2
    auto rt = MakeRuntime(ctx, config);
    ASSERT_NE(rt, nullptr);
    const int evens = 1, upper = 2;
    EXPECT_EQ(rt->ProcessSetRanks(evens).value(), (std::vector<int>{0, 2}));
    auto run = [&](int set, const std::vector<int>& members) {
      std::vector<float> v(1000, static_cast<float>(ctx.rank + 1));
      Status s = rt->Allreduce("v" + std::to_string(set), v.data(), v.data(), v.size(), common::DataType::kFloat32,
                               common::ReduceOp::kSum, set);
      bool member = std::find(members.begin(), members.end(), ctx.rank) != members.end();
      if (member) {
        ASSERT_OK(s);
        EXPECT_EQ(v[999], SumOfMembers(members)) << "set " << set;
      } else {
        EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
        EXPECT_NE(s.message().find("ps" + std::to_string(set)), std::string::npos) << s;
      }
    };
    // Sets run concurrently with each other and with the world.
    std::thread t1([&] { run(evens, {0, 2}); });
    std::thread t2([&] { run(upper, {1, 2, 3}); });
    run(kWorldSet, {0, 1, 2, 3});
    t1.join();
    t2.join();
    if (ctx.rank == 0 || ctx.rank == 2) {
      EXPECT_EQ(rt->ProcessSetRank(evens).value(), ctx.rank / 2);
    }

    auto dynamic = rt->AddProcessSet({3, 0});
    ASSERT_OK(dynamic);
    run(*dynamic, {0, 3});
    ASSERT_OK(rt->RemoveProcessSet(*dynamic));
    std::vector<float> v(4, 1);
    EXPECT_EQ(rt->Allreduce("gone", v.data(), v.data(), 4, common::DataType::kFloat32, common::ReduceOp::kSum, *dynamic)
                  .code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(rt->AddProcessSet({0, 9}).status().code(), StatusCode::kInvalidArgument);
    run(upper, {1, 2, 3});  // the others still work
    // Allgatherv on the overlapping set {1,2,3}: set rank i contributes i+1 elements of value 10*(i+1).
    if (ctx.rank >= 1) {
      int me = rt->ProcessSetRank(upper).value();
      std::vector<int32_t> in(static_cast<size_t>(me + 1), 10 * (me + 1)), out(6, -1);
      ASSERT_OK(rt->AllgathervAsync("agv", in.data(), out.data(), {1, 2, 3}, common::DataType::kInt32, upper).Wait());
      EXPECT_EQ(out, (std::vector<int32_t>{10, 20, 20, 30, 30, 30}));
    }
    ASSERT_OK(rt->Barrier());
  });
  ExpectAllRanksOk(outcomes);
}

// A process set in submission order (a torch.distributed group): many async collectives in flight, each
// launched alone (never fused, never negotiated), results exact and in order.
TEST(RuntimeTest, SubmissionOrderedSetRunsEveryCollectiveAloneInOrder) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = MakeRuntime(ctx, GlooConfig());
    ASSERT_NE(rt, nullptr);
    auto ordered = rt->AddProcessSet({0, 1, 2}, fusion::Ordering::kSubmissionOrder);
    ASSERT_OK(ordered);
    constexpr int kCount = 20;
    std::vector<std::vector<double>> bufs(kCount);
    std::vector<fusion::Handle> handles;
    for (int i = 0; i < kCount; ++i) {
      bufs[i].assign(16, ctx.rank + i);
      handles.push_back(rt->AllreduceAsync("t" + std::to_string(i), bufs[i].data(), bufs[i].data(), 16,
                                           common::DataType::kFloat64, common::ReduceOp::kSum, *ordered));
    }
    for (int i = 0; i < kCount; ++i) {
      ASSERT_OK(handles[i].Wait());
      EXPECT_EQ(bufs[i][15], 0 + 1 + 2 + 3.0 * i) << i;
    }
    double root = ctx.rank == 2 ? 7 : -1;
    ASSERT_OK(rt->BroadcastAsync("b", &root, &root, 1, common::DataType::kFloat64, 2, *ordered).Wait());
    EXPECT_EQ(root, 7);
    auto stats = rt->Stats(*ordered);
    ASSERT_OK(stats);
    EXPECT_EQ(stats->launches, static_cast<uint64_t>(kCount + 1));
    EXPECT_EQ(stats->fused_launches, 0u);
  });
  ExpectAllRanksOk(outcomes);
}

TEST(RuntimeTest, GroupsOfTheirMembersAloneAndPointToPoint) {
  runtime_testing::WorldOptions options;
  options.size = 4;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    auto rt = MakeRuntime(ctx, GlooConfig());
    ASSERT_NE(rt, nullptr);
    // Only the odd ranks make the odd group; the even ranks make theirs twice under one key.
    std::vector<int> members = ctx.rank % 2 ? std::vector<int>{1, 3} : std::vector<int>{0, 2};
    const int me = ctx.rank / 2, peer = 1 - me;
    auto group = rt->AddGroup(members, ctx.rank % 2 ? "odd" : "even");
    ASSERT_OK(group);
    if (ctx.rank % 2 == 0) {
      auto again = rt->AddGroup(members, "even");
      ASSERT_OK(again);
      EXPECT_NE(*again, *group);
    }
    EXPECT_EQ(rt->AddGroup({0, 1}, "x").status().code(),
              ctx.rank < 2 ? StatusCode::kOk : StatusCode::kFailedPrecondition);
    double sum = ctx.rank;
    ASSERT_OK(
        rt->AllreduceAsync("s", &sum, &sum, 1, common::DataType::kFloat64, common::ReduceOp::kSum, *group).Wait());
    EXPECT_EQ(sum, ctx.rank % 2 ? 4 : 2);
    // Both directions at once, two tags received in the other order, on the group (peers by group rank).
    std::vector<int64_t> a(1000, ctx.rank), b(3, 10 * ctx.rank), got_a(1000), got_b(3);
    auto sa = rt->SendAsync(a.data(), a.size() * 8, peer, 1, *group);
    auto sb = rt->SendAsync(b.data(), b.size() * 8, peer, 2, *group);
    auto rb = rt->RecvAsync(got_b.data(), got_b.size() * 8, peer, 2, *group);
    auto ra = rt->RecvAsync(got_a.data(), got_a.size() * 8, peer, 1, *group);
    for (auto* t : {&sa, &sb, &rb, &ra}) {
      ASSERT_OK(*t);
      ASSERT_OK((**t)->Wait());
    }
    const int64_t other = members[peer];
    EXPECT_EQ(got_a[999], other);
    EXPECT_EQ(got_b[2], 10 * other);
    // On the world too; a bad peer is an argument error.
    int64_t token = ctx.rank, from = -1;
    auto s = rt->SendAsync(&token, 8, (ctx.rank + 1) % 4, 0);
    auto r = rt->RecvAsync(&from, 8, (ctx.rank + 3) % 4, 0);
    ASSERT_OK(s);
    ASSERT_OK(r);
    ASSERT_OK((*r)->Wait());
    ASSERT_OK((*s)->Wait());
    EXPECT_EQ(from, (ctx.rank + 3) % 4);
    EXPECT_EQ(rt->SendAsync(&token, 8, ctx.rank, 0).status().code(), StatusCode::kInvalidArgument);
  });
  ExpectAllRanksOk(outcomes);
}

// A Gloo world communicator whose `fail_at`-th float32 allreduce (the data's: negotiations are int64) fails on this
// rank alone, after every rank agreed to run it (what a buffer on the wrong device or a sticky CUDA error does on
// one NCCL rank).
class FailsOneAllreduce : public runtime_testing::ForwardingCommunicator {
 public:
  FailsOneAllreduce(std::unique_ptr<comm::Communicator> inner, int fail_at)
      : ForwardingCommunicator(std::move(inner)), fail_at_(fail_at) {}

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override {
    if (type == common::DataType::kFloat32 && ++allreduces_ == fail_at_) {
      return InvalidArgumentError("this rank's own failure");
    }
    return ForwardingCommunicator::DoAllreduce(in, out, count, type, op);
  }

 private:
  const int fail_at_;
  int allreduces_ = 0;  // the engine thread's only (data and control are this one communicator under Gloo)
};

// One rank's own failure of a collective its peers ran breaks the world on every rank: the peer's collective
// fails at once (not after the timeout) and neither rank's next collective pairs with the other's previous one.
TEST(RuntimeTest, ARanksOwnFailureOfANegotiatedCollectiveAbortsItOnEveryRank) {
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    RuntimeConfig config = GlooConfig();
    config.timeout = 30s;
    if (ctx.rank == 1) {
      // "b" is its second float32 allreduce.
      config.communicator_factory = [](std::shared_ptr<store::Store> store, int rank, int size,
                                       const WorldOptions& wo) -> StatusOr<std::unique_ptr<comm::Communicator>> {
        RINGMASTER_ASSIGN_OR_RETURN(auto inner, CreateWorldCommunicator(std::move(store), rank, size, wo));
        return std::unique_ptr<comm::Communicator>(new FailsOneAllreduce(std::move(inner), 2));
      };
    }
    auto rt = MakeRuntime(ctx, config);
    ASSERT_NE(rt, nullptr);
    std::vector<float> x(1024, 1.0f);
    ASSERT_OK(rt->Allreduce("a", x.data(), x.data(), x.size(), common::DataType::kFloat32, common::ReduceOp::kSum));
    const auto start = std::chrono::steady_clock::now();
    Status b = rt->Allreduce("b", x.data(), x.data(), x.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    EXPECT_EQ(b.code(), ctx.rank == 1 ? StatusCode::kInvalidArgument : StatusCode::kAborted) << b;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "the peer waited for the collective timeout";
    Status c = rt->Allreduce("c", x.data(), x.data(), x.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    EXPECT_EQ(c.code(), StatusCode::kAborted) << "the next collective ran after a one-sided failure: " << c;
  });
  ExpectAllRanksOk(outcomes);
}

TEST(RuntimeTest, KilledPeerFailsPendingHandlesWithAborted) {
  runtime_testing::WorldOptions options;
  options.size = 3;
  options.wait_for_all_at_exit = false;
  auto outcomes = runtime_testing::RunWorld(options, [](RankContext& ctx) {
    RuntimeConfig config = GlooConfig();
    config.timeout = 1500ms;
    auto rt = MakeRuntime(ctx, config);
    ASSERT_NE(rt, nullptr);
    std::vector<float> big(4u << 20, 1.0f);
    ASSERT_OK(rt->Allreduce("warm", big.data(), big.data(), 16, common::DataType::kFloat32, common::ReduceOp::kSum));
    if (ctx.rank == 1) {
      std::thread([] {
        std::this_thread::sleep_for(10ms);
        ::raise(SIGKILL);
      }).detach();
      for (;;)
        (void)rt->Allreduce("big", big.data(), big.data(), big.size(), common::DataType::kFloat32,
                            common::ReduceOp::kSum);
    }
    Status s;
    auto start = store::Clock::now();
    for (int i = 0; i < 1000 && s.ok(); ++i) {
      start = store::Clock::now();
      s = rt->Allreduce("big", big.data(), big.data(), big.size(), common::DataType::kFloat32, common::ReduceOp::kSum);
    }
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
    EXPECT_LT(store::Clock::now() - start, 1500ms + 3000ms);
    std::vector<float> small(4, 1);
    EXPECT_EQ(rt->Allreduce("after", small.data(), small.data(), 4, common::DataType::kFloat32, common::ReduceOp::kSum)
                  .code(),
              StatusCode::kAborted);
  });
  EXPECT_TRUE(outcomes[0].ok()) << DescribeFailures(outcomes);
  EXPECT_TRUE(outcomes[2].ok()) << DescribeFailures(outcomes);
  EXPECT_EQ(outcomes[1].signal, SIGKILL);
}

}  // namespace
}  // namespace ringmaster::runtime
