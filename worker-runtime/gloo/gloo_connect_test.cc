// ConnectMesh (gloo_connect.h): every pair of the mesh connected in parallel (addresses read key by key below 4
// ranks, gathered by rank 0 from 4 on), usable by Gloo's algorithms and by GlooSockets; a peer that never publishes or
// whose pairs are gone fails the connect as Aborted naming that peer, within Gloo's timeouts; many contexts, with and
// without the loop nudger, on one device and at once. (Speed is the bench's: ringmaster-elastic-bench prints our
// connect next to Gloo's connectFullMesh.)
#include "worker-runtime/gloo/gloo_connect.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/gloo/gloo_abort.h"
#include "worker-runtime/gloo/gloo_store.h"
#include "worker-runtime/store/store_client.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::gloo {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<::gloo::transport::Device> NewDevice() {
  ::gloo::transport::tcp::attr attr("127.0.0.1");
  return ::gloo::transport::tcp::CreateDevice(attr);
}

// Sums rank+1 over the mesh with Gloo's ring allreduce and passes Gloo's barrier.
void ExpectWorks(const std::shared_ptr<::gloo::Context>& context) {
  const int size = context->size;
  std::vector<double> value(3, context->rank + 1.0);
  ::gloo::AllreduceOptions opts(context);
  opts.setOutput<double>(value.data(), value.size());
  opts.setAlgorithm(::gloo::AllreduceOptions::Algorithm::RING);
  opts.setReduceFunction([](void* c, const void* a, const void* b, size_t n) {
    for (size_t i = 0; i < n; ++i)
      static_cast<double*>(c)[i] = static_cast<const double*>(a)[i] + static_cast<const double*>(b)[i];
  });
  opts.setTimeout(10s);
  ::gloo::allreduce(opts);
  for (double v : value) EXPECT_EQ(v, size * (size + 1) / 2.0);
  ::gloo::BarrierOptions barrier(context);
  barrier.setTimeout(10s);
  ::gloo::barrier(barrier);
}

class ConnectMeshSizes : public ::testing::TestWithParam<int> {};

TEST_P(ConnectMeshSizes, ConnectsEveryPairForGlooAndGlooSockets) {
  runtime_testing::WorldOptions options;
  options.size = GetParam();
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto device = NewDevice();
    GlooStore store(ctx.store, "mesh", 10s);
    MeshOptions mo;
    mo.timeout = 10s;
    auto mesh = ConnectMesh(store, device, ctx.rank, ctx.size, mo);
    ASSERT_OK(mesh);
    ASSERT_EQ(mesh->context->rank, ctx.rank);
    ASSERT_EQ(mesh->context->size, ctx.size);
    for (int i = 0; i < ctx.size; ++i) {
      if (i == ctx.rank) {
        EXPECT_TRUE(mesh->published[i].empty());
        continue;
      }
      EXPECT_NE(mesh->context->getPair(i), nullptr) << "pair " << i;
      EXPECT_FALSE(mesh->published[i].empty()) << "rank " << i << "'s addresses";
    }
    // Every connection is found by address, as the communicator's Abort needs.
    GlooSockets sockets = GlooSockets::Find(*mesh->context, mesh->published);
    EXPECT_EQ(sockets.count(), static_cast<size_t>(ctx.size - 1));
    ExpectWorks(mesh->context);
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ConnectMeshSizes, ::testing::Values(1, 2, 3, 4, 8));

// Many contexts one after another on one device, alternately nudged and not, and two at once (a split's
// members rendezvous on their parent's device): each one's nudger registers with and leaves the same loop.
TEST(ConnectMeshTest, ManyContextsOnOneDeviceNudgedOrNotAndConcurrently) {
  runtime_testing::WorldOptions options;
  options.size = 4;
  auto outcomes = runtime_testing::RunWorld(options, [](runtime::RankContext& ctx) {
    auto device = NewDevice();
    std::vector<std::shared_ptr<::gloo::Context>> kept;  // alive together, as a communicator and its sets
    for (int i = 0; i < 12; ++i) {
      GlooStore store(ctx.store, "seq" + std::to_string(i), 10s);
      MeshOptions mo;
      mo.timeout = 10s;
      mo.nudge_loop = i % 2 == 0;
      auto mesh = ConnectMesh(store, device, ctx.rank, ctx.size, mo);
      ASSERT_OK(mesh) << "context " << i;
      ExpectWorks(mesh->context);
      kept.push_back(mesh->context);
    }
    // Two at once, each on its own store connection (one StoreClient serializes its requests, a wait included).
    StatusOr<ConnectedMesh> both[2] = {InternalError("not run"), InternalError("not run")};
    store::StoreClientOptions co;
    co.port = ctx.store_port;
    co.secret = ctx.secret;
    co.generation = ctx.generation;
    co.rank = static_cast<uint32_t>(ctx.rank);
    auto second = store::StoreClient::Connect(co);
    ASSERT_OK(second);
    std::shared_ptr<store::Store> second_store(std::move(second).value());
    std::thread other([&] {
      GlooStore store(second_store, "concurrent1", 10s);
      both[1] = ConnectMesh(store, device, ctx.rank, ctx.size, MeshOptions{10s, true});
    });
    {
      GlooStore store(ctx.store, "concurrent0", 10s);
      both[0] = ConnectMesh(store, device, ctx.rank, ctx.size, MeshOptions{10s, true});
    }
    other.join();
    for (auto& m : both) {
      ASSERT_OK(m);
      ExpectWorks(m->context);
    }
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

// At 3 ranks every rank reads every key; at 5, rank 0 gathers them and publishes why it could not.
class NeverPublishes : public ::testing::TestWithParam<int> {};

TEST_P(NeverPublishes, PeerThatNeverPublishesFailsAsAbortedNamingIt) {
  constexpr auto kTimeout = 600ms;
  runtime_testing::WorldOptions options;
  options.size = GetParam();
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    std::vector<std::string> others;
    for (int r = 0; r < ctx.size; ++r) {
      if (r != 1) others.push_back("done/" + std::to_string(r));
    }
    if (ctx.rank == 1) {  // never connects, but stays alive (rank 0 serves the store) until the others are done
      EXPECT_OK(ctx.store->Wait(others, 30s));
      return;
    }
    auto device = NewDevice();
    // Rank 0 gives up first: the others then read its reason rather than time out themselves.
    const auto timeout = ctx.rank == 0 ? kTimeout : 3 * kTimeout;
    GlooStore store(ctx.store, "mesh", timeout);
    const auto start = std::chrono::steady_clock::now();
    auto mesh = ConnectMesh(store, device, ctx.rank, ctx.size, MeshOptions{timeout, true});
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(mesh.status().code(), StatusCode::kAborted) << mesh.status();
    EXPECT_NE(mesh.status().message().find("rank 1's addresses"), std::string::npos) << mesh.status();
    // Bounded by the store wait's timeout (loose: a loaded 2-core machine), not Gloo's 5x connect timeout.
    EXPECT_LT(took, timeout + 3s);
    EXPECT_OK(ctx.store->Set("done/" + std::to_string(ctx.rank), "1"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NeverPublishes, ::testing::Values(3, 5));

// Rank 1 publishes the address of a socket that is bound but does not listen (a pair that is gone; bound, so
// that no dial's own port can take it and connect to itself): rank 0's connect to it fails (its dial is refused,
// or its wait for rank 1's dial times out) and reports rank 1.
TEST(ConnectMeshTest, PeerWhosePairIsGoneFailsAsAbortedNamingIt) {
  constexpr auto kTimeout = 400ms;
  runtime_testing::WorldOptions options;
  options.size = 2;
  auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
    auto device = NewDevice();
    GlooStore store(ctx.store, "mesh", kTimeout);
    if (ctx.rank == 1) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len), 0);
      store.set("1", ::gloo::transport::tcp::Address(bound).bytes());
      EXPECT_OK(ctx.store->Wait({"done/0"}, 60s));
      ::close(fd);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    auto mesh = ConnectMesh(store, device, ctx.rank, ctx.size, MeshOptions{kTimeout, true});
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(mesh.status().code(), StatusCode::kAborted) << mesh.status();
    EXPECT_NE(mesh.status().message().find("connecting to rank 1"), std::string::npos) << mesh.status();
    EXPECT_LT(took, 5 * kTimeout + 3s);  // Gloo's connect timeout is 5x the context's
    EXPECT_OK(ctx.store->Set("done/0", "1"));
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << runtime::DescribeFailures(outcomes);
}

TEST(ConnectMeshTest, RejectsRankOutOfRange) {
  auto device = NewDevice();
  class NoStore : public ::gloo::rendezvous::Store {
   public:
    void set(const std::string&, const std::vector<char>&) override { ADD_FAILURE() << "store used"; }
    std::vector<char> get(const std::string&) override {
      ADD_FAILURE() << "store used";
      return {};
    }
    void wait(const std::vector<std::string>&) override { ADD_FAILURE() << "store used"; }
    void wait(const std::vector<std::string>&, const std::chrono::milliseconds&) override {
      ADD_FAILURE() << "store used";
    }
  } store;
  EXPECT_EQ(ConnectMesh(store, device, 3, 3, MeshOptions{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConnectMesh(store, device, -1, 3, MeshOptions{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConnectMesh(store, nullptr, 0, 3, MeshOptions{}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::gloo
