// The same-host allreduce (shm_allreduce.h) against gloo::allreduce's ring on the same inputs: equal bit for
// bit, at 2..8 ranks, odd sizes (one element; not a multiple of the ranks; several windows and ring
// segments), float32/float64/bfloat16, every op. The inputs span many magnitudes, so that another order of
// additions gives other bits (checked: the rank-order sum differs somewhere at 3+ ranks). Also: the opt-in
// (AllreducePolicy::kBcube) sums correctly, and the communicator with shared memory off (TCP) still agrees,
// also where it exchanges small buffers whole instead of running the ring (ExchangeAllreduce...).
#include "worker-runtime/gloo/shm_allreduce.h"

#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/common/dtype.h"
#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/gloo/gloo_store.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::gloo {
namespace {

using namespace std::chrono_literals;
using common::DataType;
using common::ReduceOp;

// Rank `rank`'s input: values of both signs over ~2^-20 .. 2^20 (so the order of additions shows).
std::vector<uint8_t> Input(DataType type, int rank, size_t count, uint64_t salt) {
  std::mt19937_64 gen(salt * 1000003 + static_cast<uint64_t>(rank));
  std::normal_distribution<double> value(0.0, 1.0);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<uint8_t> out(count * common::DataTypeSize(type));
  for (size_t i = 0; i < count; ++i)
    common::StoreFromDouble(type, out.data(), i, std::ldexp(value(gen), exponent(gen)));
  return out;
}

// gloo::allreduce's ring, as the communicator runs it over TCP (and torch's ProcessGroupGloo).
std::vector<uint8_t> GlooRing(const std::shared_ptr<::gloo::Context>& context, DataType type, ReduceOp op,
                              std::vector<uint8_t> buf) {
  const size_t esize = common::DataTypeSize(type);
  const size_t count = buf.size() / esize;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    ::gloo::AllreduceOptions opts(context);
    opts.setOutput<T>(reinterpret_cast<T*>(buf.data()), count);
    opts.setReduceFunction(
        [type, op](void* o, const void* a, const void* b, size_t n) { common::ReduceBuffers(type, op, o, a, b, n); });
    opts.setTimeout(60s);
    ::gloo::allreduce(opts);
  };
  if (esize == 2) run(uint16_t{});
  if (esize == 4) run(uint32_t{});
  if (esize == 8) run(uint64_t{});
  return buf;
}

std::shared_ptr<::gloo::Context> Connect(runtime::RankContext& ctx) {
  auto context = std::make_shared<::gloo::rendezvous::Context>(ctx.rank, ctx.size);
  context->setTimeout(60s);
  GlooStore store(ctx.store, "reference", 60s);
  std::shared_ptr<::gloo::transport::Device> device =
      ::gloo::transport::tcp::CreateDevice(::gloo::transport::tcp::attr("127.0.0.1"));
  context->connectFullMesh(store, device);
  return context;
}

struct Case {
  DataType type;
  ReduceOp op;
  size_t count;
};

void ExpectBitIdenticalToGlooRing(int ranks, size_t slot_bytes, const std::vector<Case>& cases) {
  runtime_testing::WorldOptions options;
  options.size = ranks;
  options.deadline = 240s;
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    auto context = Connect(ctx);
    auto shm =
        ShmAllreduce::Connect(*ctx.store, "shm-test", ctx.rank, ctx.size, slot_bytes, 60s, [] { return Status::Ok(); });
    ASSERT_OK(shm);
    ASSERT_NE(*shm, nullptr) << "ranks on one host did not set shared memory up";
    bool order_shows = false;
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      SCOPED_TRACE(std::string(common::DataTypeName(c.type)) + " " + std::string(common::ReduceOpName(c.op)) + " x" +
                   std::to_string(c.count));
      std::vector<uint8_t> in = Input(c.type, ctx.rank, c.count, k);
      std::vector<uint8_t> want = GlooRing(context, c.type, c.op, in);
      std::vector<uint8_t> out(in.size(), 0xee), inplace = in;
      ASSERT_OK((*shm)->Run(in.data(), out.data(), c.count, c.type, c.op, 60s, [] { return Status::Ok(); }));
      ASSERT_OK((*shm)->Run(inplace.data(), inplace.data(), c.count, c.type, c.op, 60s, [] { return Status::Ok(); }));
      size_t differ = 0, differ_inplace = 0;
      for (size_t i = 0; i < want.size(); ++i) differ += out[i] != want[i], differ_inplace += inplace[i] != want[i];
      EXPECT_EQ(differ, 0u) << "bytes differing from gloo::allreduce (out of place)";
      EXPECT_EQ(differ_inplace, 0u) << "bytes differing from gloo::allreduce (in place)";
      if (c.op == ReduceOp::kSum && c.type == DataType::kFloat32) {
        // Sanity of the test itself: the plain rank-order sum differs somewhere (the order matters).
        std::vector<uint8_t> naive = Input(c.type, 0, c.count, k);
        for (int r = 1; r < ctx.size; ++r) {
          auto x = Input(c.type, r, c.count, k);
          common::ReduceBuffers(c.type, c.op, naive.data(), naive.data(), x.data(), c.count);
        }
        order_shows = order_shows || naive != want;
      }
    }
    if (ranks >= 3) {
      EXPECT_TRUE(order_shows) << "the inputs do not tell one order of additions from another";
    }
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

std::vector<Case> Cases() {
  return {
      {DataType::kFloat32, ReduceOp::kSum, 1},        {DataType::kFloat32, ReduceOp::kSum, 13},
      {DataType::kFloat32, ReduceOp::kSum, 262147},   // just over 1 MiB: the ring's chunks are not the windows'
      {DataType::kFloat32, ReduceOp::kSum, 1000003},  // several windows and ring segments per rank
      {DataType::kFloat32, ReduceOp::kMax, 4099},     {DataType::kFloat32, ReduceOp::kMin, 4099},
      {DataType::kFloat32, ReduceOp::kProduct, 4099}, {DataType::kFloat32, ReduceOp::kAvg, 70001},
      {DataType::kFloat64, ReduceOp::kSum, 300007},   {DataType::kBFloat16, ReduceOp::kSum, 100003},
  };
}

// Slots of 64 KiB: many windows per buffer, windows that cut the ring's chunks, slots reused many times.
TEST(ShmAllreduceTest, BitIdenticalToGlooRingAt2To4Ranks) {
  for (int n = 2; n <= 4; ++n) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    ExpectBitIdenticalToGlooRing(n, 64u << 10, Cases());
  }
}

TEST(ShmAllreduceTest, BitIdenticalToGlooRingAt5To8Ranks) {
  for (int n = 5; n <= 8; ++n) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    ExpectBitIdenticalToGlooRing(n, 64u << 10, Cases());
  }
}

// The slot size the communicator uses (one window for most of these sizes).
TEST(ShmAllreduceTest, BitIdenticalToGlooRingWithDefaultSlots) {
  for (int n : {3, 8}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    ExpectBitIdenticalToGlooRing(n, ShmAllreduce::DefaultSlotBytes(n), Cases());
  }
}

// Through the communicator: shared memory (default), TCP (shared memory off) and gloo::allreduce agree bit for
// bit; the opt-in's BCube (shared memory off, as between hosts) sums integers exactly and floats within
// rounding, at power-of-two and other world sizes.
TEST(ShmAllreduceTest, CommunicatorPathsAgreeAndBcubeSums) {
  for (int n : {2, 3, 5, 6, 7, 8}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    runtime_testing::WorldOptions options;
    options.size = n;
    options.deadline = 240s;
    auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
      auto make = [&](const std::string& prefix, AllreducePolicy policy, bool shm) {
        GlooOptions go;
        go.timeout = 60s;
        go.allreduce = policy;
        go.shared_memory = shm;
        auto comm = GlooCommunicator::Create(ctx.store, prefix, ctx.rank, ctx.size, go);
        EXPECT_OK(comm);
        return comm.ok() ? std::move(comm).value() : nullptr;
      };
      auto exact = make("exact", AllreducePolicy::kExact, true);
      auto tcp = make("tcp", AllreducePolicy::kExact, false);
      auto bcube = make("bcube", AllreducePolicy::kBcube, false);  // BCube itself (as between hosts)
      ASSERT_TRUE(exact && tcp && bcube);
      auto context = Connect(ctx);
      for (size_t count : {size_t{1}, size_t{1001}, size_t{400003}}) {  // all <= 1 MiB per rank: BCube
        SCOPED_TRACE(count);
        auto in = Input(DataType::kFloat32, ctx.rank, count, count);
        auto want = GlooRing(context, DataType::kFloat32, ReduceOp::kSum, in);
        std::vector<uint8_t> a = in, b = in;
        ASSERT_OK(exact->Allreduce(a.data(), a.data(), count, DataType::kFloat32, ReduceOp::kSum));
        ASSERT_OK(tcp->Allreduce(b.data(), b.data(), count, DataType::kFloat32, ReduceOp::kSum));
        EXPECT_TRUE(a == want) << "shared memory differs from gloo::allreduce";
        EXPECT_TRUE(b == want) << "TCP differs from gloo::allreduce";

        // BCube: integers (exact in float32) sum exactly; the random floats within rounding of the ring.
        std::vector<float> ints(count), sums(count);
        for (size_t i = 0; i < count; ++i) ints[i] = static_cast<float>((i * 7 + static_cast<size_t>(ctx.rank)) % 1000);
        ASSERT_OK(bcube->Allreduce(ints.data(), ints.data(), count, DataType::kFloat32, ReduceOp::kSum));
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) {
          float expect = 0;
          for (int r = 0; r < ctx.size; ++r) expect += static_cast<float>((i * 7 + static_cast<size_t>(r)) % 1000);
          wrong += ints[i] != expect;
        }
        EXPECT_EQ(wrong, 0u) << "BCube integer sums";
        std::vector<uint8_t> c = in;
        ASSERT_OK(bcube->Allreduce(c.data(), c.data(), count, DataType::kFloat32, ReduceOp::kSum));
        std::vector<std::vector<uint8_t>> inputs;
        for (int r = 0; r < ctx.size; ++r) inputs.push_back(Input(DataType::kFloat32, r, count, count));
        size_t off = 0;
        for (size_t i = 0; i < count; ++i) {
          double got = common::LoadAsDouble(DataType::kFloat32, c.data(), i);
          double ref = 0, mag = 0;
          for (const auto& x_r : inputs) {
            double x = common::LoadAsDouble(DataType::kFloat32, x_r.data(), i);
            ref += x, mag += std::fabs(x);
          }
          off += std::fabs(got - ref) > 1e-6 * mag + 1e-30;
        }
        EXPECT_EQ(off, 0u) << "BCube float sums beyond rounding";
      }
    });
    for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
  }
}

// Small allreduces over TCP at 3+ ranks (GlooOptions::exchange_max_send_bytes): one exchange of whole buffers,
// then each rank adds them in the ring's order -- bit for bit gloo::allreduce's ring, at every type and op, one
// element, fewer elements than ranks, sizes that are no multiple of the ranks, and either side of the limit.
TEST(ShmAllreduceTest, ExchangeAllreduceBitIdenticalToGlooRing) {
  for (int n : {3, 4, 5, 8}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    const size_t limit = kExchangeMaxSendBytes / sizeof(float) / static_cast<size_t>(n - 1);  // float32 elements
    const std::vector<Case> cases = {
        {DataType::kFloat32, ReduceOp::kSum, 1},      {DataType::kFloat32, ReduceOp::kSum, 2},
        {DataType::kFloat32, ReduceOp::kSum, 1024},   {DataType::kFloat32, ReduceOp::kSum, 4099},
        {DataType::kFloat32, ReduceOp::kSum, limit},  {DataType::kFloat32, ReduceOp::kSum, limit + 1},
        {DataType::kFloat32, ReduceOp::kMax, 4099},   {DataType::kFloat32, ReduceOp::kMin, 4099},
        {DataType::kFloat32, ReduceOp::kProduct, 13}, {DataType::kFloat32, ReduceOp::kAvg, 1001},
        {DataType::kFloat64, ReduceOp::kSum, 3001},   {DataType::kBFloat16, ReduceOp::kSum, 5003},
        {DataType::kFloat16, ReduceOp::kSum, 777},
    };
    runtime_testing::WorldOptions options;
    options.size = n;
    options.deadline = 240s;
    auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
      GlooOptions go;
      go.timeout = 60s;
      go.shared_memory = false;  // TCP, as between hosts and before shared memory is set up
      auto comm = GlooCommunicator::Create(ctx.store, "exchange", ctx.rank, ctx.size, go);
      ASSERT_OK(comm);
      auto context = Connect(ctx);
      bool order_shows = false;
      for (size_t k = 0; k < cases.size(); ++k) {
        const Case& c = cases[k];
        SCOPED_TRACE(std::string(common::DataTypeName(c.type)) + " " + std::string(common::ReduceOpName(c.op)) + " x" +
                     std::to_string(c.count));
        std::vector<uint8_t> in = Input(c.type, ctx.rank, c.count, k);
        std::vector<uint8_t> want = GlooRing(context, c.type, c.op, in);
        if (c.op == ReduceOp::kAvg) common::FinishAverage(c.type, want.data(), c.count, ctx.size);
        std::vector<uint8_t> out(in.size(), 0xee), inplace = in;
        ASSERT_OK((*comm)->Allreduce(in.data(), out.data(), c.count, c.type, c.op));
        ASSERT_OK((*comm)->Allreduce(inplace.data(), inplace.data(), c.count, c.type, c.op));
        EXPECT_TRUE(out == want) << "differs from gloo::allreduce (out of place)";
        EXPECT_TRUE(inplace == want) << "differs from gloo::allreduce (in place)";
        if (c.op == ReduceOp::kSum && c.type == DataType::kFloat32 && c.count <= limit) {
          // Sanity of the test itself: the plain rank-order sum differs somewhere (the order matters).
          std::vector<uint8_t> naive = Input(c.type, 0, c.count, k);
          for (int r = 1; r < ctx.size; ++r) {
            auto x = Input(c.type, r, c.count, k);
            common::ReduceBuffers(c.type, c.op, naive.data(), naive.data(), x.data(), c.count);
          }
          order_shows = order_shows || naive != want;
        }
      }
      EXPECT_TRUE(order_shows) << "the inputs do not tell one order of additions from another";
    });
    for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
  }
}

// An exchange allreduce waiting for a peer that never sends ends at Abort (the membership changed), not at
// its timeout.
TEST(ShmAllreduceTest, AbortEndsAnExchangeAllreduce) {
  constexpr auto kLongTimeout = 60s;
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    GlooOptions go;
    go.timeout = kLongTimeout;
    go.shared_memory = false;
    auto comm = GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, go);
    ASSERT_OK(comm);
    std::vector<float> buf(16, 1.0f);
    ASSERT_OK((*comm)->Allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum));
    EXPECT_EQ(buf[0], 3.0f);
    if (ctx.rank == 0) {  // never joins the next one (and serves the store)
      EXPECT_OK(ctx.store->Wait({"survivor/1", "survivor/2"}, 120s));
      return;
    }
    std::thread watcher([&] {
      std::this_thread::sleep_for(300ms);  // blocked by then
      (*comm)->Abort("membership generation 2");
    });
    auto start = std::chrono::steady_clock::now();
    Status s = (*comm)->Allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum);
    auto took = std::chrono::steady_clock::now() - start;
    watcher.join();
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
    EXPECT_LT(took, kLongTimeout / 2) << "ended by its timeout, not by the abort";
    EXPECT_OK(ctx.store->Set("survivor/" + std::to_string(ctx.rank), "done"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

// Abort from another thread ends an allreduce blocked in shared memory (a peer that never joins), not its
// timeout; and the blocked peers learn of it from the aborted rank (MarkFailed) rather than their timeout.
TEST(ShmAllreduceTest, AbortEndsASharedMemoryWaitAndFailsThePeersFast) {
  constexpr auto kLongTimeout = 60s;
  runtime_testing::WorldOptions options;
  options.size = 3;
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    GlooOptions go;
    go.timeout = kLongTimeout;
    auto comm = GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, go);
    ASSERT_OK(comm);
    std::vector<float> buf(1u << 20, 1.0f);
    // Together once: shared memory is set up.
    ASSERT_OK((*comm)->Allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum));
    if (ctx.rank == 0) {  // never joins the next one (and serves the store)
      EXPECT_OK(ctx.store->Wait({"survivor/1", "survivor/2"}, 120s));
      return;
    }
    std::thread watcher;
    if (ctx.rank == 1) {
      watcher = std::thread([&] {
        std::this_thread::sleep_for(300ms);  // blocked by then
        (*comm)->Abort("membership generation 2");
      });
    }
    auto start = std::chrono::steady_clock::now();
    Status s = (*comm)->Allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum);
    auto took = std::chrono::steady_clock::now() - start;
    if (watcher.joinable()) watcher.join();
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
    EXPECT_LT(took, kLongTimeout / 2) << "ended by its timeout, not by the abort";
    if (ctx.rank == 1) {
      EXPECT_NE(s.message().find("membership generation 2"), std::string::npos) << s;
    }
    EXPECT_OK(ctx.store->Set("survivor/" + std::to_string(ctx.rank), "done"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

}  // namespace
}  // namespace ringmaster::gloo
