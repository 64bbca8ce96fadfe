// Every collective x dtype x op of the Gloo backend against a reference, with
// 1 to 4 ranks forked on loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "gloo/gloo_communicator.h"
#include "testing/multiprocess.h"
#include "common/pattern.h"
#include "base/status_test_macros.h"

namespace ringmaster::runtime {
namespace {



using testing::RankContext;


constexpr size_t kCounts[] = {1, 37, 4099};

std::unique_ptr<Communicator> MakeWorld(RankContext& ctx) {
  GlooOptions options;
  options.timeout = std::chrono::seconds(20);
  auto comm = GlooCommunicator::Create(ctx.store, "world", ctx.rank, ctx.size, options);
  EXPECT_OK(comm) << comm.status();
  return comm.ok() ? std::move(comm).value() : nullptr;
}

void CheckAllreduce(Communicator& comm) {
  const int n = comm.size();
  for (DataType t : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      for (size_t count : kCounts) {
        for (bool in_place : {false, true}) {
          auto in = MakeInput(t, op, comm.rank(), count);
          std::vector<uint8_t> out(in.size(), 0xee);
          void* dst = in_place ? in.data() : out.data();
          ASSERT_OK(comm.Allreduce(in.data(), dst, count, t, op));
          auto want = ReferenceReduce(t, op, n, count);
          ASSERT_EQ(CountMismatches(t, dst, want.data(), count), 0u)
              << "allreduce " << DataTypeName(t) << " " << ReduceOpName(op) << " count " << count
              << (in_place ? " in-place" : "") << " size " << n;
          if (!in_place) {
            ASSERT_EQ(in, MakeInput(t, op, comm.rank(), count)) << "allreduce modified its input";
          }
        }
      }
    }
  }
  // A buffer larger than Gloo's 1 MiB segment, so the ring runs several segments per rank.
  const size_t big = 300001;
  auto in = MakeInput(DataType::kFloat32, ReduceOp::kSum, comm.rank(), big);
  ASSERT_OK(comm.Allreduce(in.data(), in.data(), big, DataType::kFloat32, ReduceOp::kSum));
  auto want = ReferenceReduce(DataType::kFloat32, ReduceOp::kSum, n, big);
  EXPECT_EQ(CountMismatches(DataType::kFloat32, in.data(), want.data(), big), 0u);
}

void CheckReduceScatter(Communicator& comm) {
  const int n = comm.size();
  for (DataType t : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      for (size_t count : {size_t{1}, size_t{37}}) {
        for (bool in_place : {false, true}) {
          auto in = MakeInput(t, op, comm.rank(), count * n);
          std::vector<uint8_t> out(count * DataTypeSize(t), 0xee);
          void* dst = in_place ? in.data() : out.data();
          ASSERT_OK(comm.ReduceScatter(in.data(), dst, count, t, op));
          auto want = ReferenceReduce(t, op, n, count, count * comm.rank());
          ASSERT_EQ(CountMismatches(t, dst, want.data(), count), 0u)
              << "reduce-scatter " << DataTypeName(t) << " " << ReduceOpName(op) << " count " << count
              << (in_place ? " in-place" : "") << " size " << n;
        }
      }
    }
  }
}

void CheckAllgather(Communicator& comm) {
  const int n = comm.size();
  for (DataType t : kAllDataTypes) {
    for (size_t count : kCounts) {
      const size_t es = DataTypeSize(t);
      auto in = MakeInput(t, ReduceOp::kSum, comm.rank(), count);
      std::vector<uint8_t> out(count * es * n, 0xee);
      ASSERT_OK(comm.Allgather(in.data(), out.data(), count, t));
      for (int r = 0; r < n; ++r) {
        auto want = MakeInput(t, ReduceOp::kSum, r, count);
        ASSERT_EQ(std::memcmp(out.data() + r * count * es, want.data(), want.size()), 0)
            << "allgather " << DataTypeName(t) << " block " << r;
      }
      // In place: this rank's block of out already holds its input.
      std::vector<uint8_t> inplace(count * es * n, 0xee);
      std::memcpy(inplace.data() + comm.rank() * count * es, in.data(), in.size());
      ASSERT_OK(comm.Allgather(inplace.data() + comm.rank() * count * es, inplace.data(), count, t));
      ASSERT_EQ(inplace, out) << "in-place allgather " << DataTypeName(t);
    }
  }
  // Allgatherv with uneven counts, including a rank that contributes nothing.
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = r == 1 ? 0 : static_cast<size_t>(3 + 5 * r);
  size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  for (DataType t : kAllDataTypes) {
    const size_t es = DataTypeSize(t);
    auto in = MakeInput(t, ReduceOp::kSum, comm.rank(), counts[comm.rank()]);
    std::vector<uint8_t> out(total * es, 0xee);
    ASSERT_OK(comm.Allgatherv(in.data(), out.data(), counts, t));
    size_t offset = 0;
    for (int r = 0; r < n; ++r) {
      auto want = MakeInput(t, ReduceOp::kSum, r, counts[r]);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), out.begin() + static_cast<ptrdiff_t>(offset)))
          << "allgatherv block " << r;
      offset += want.size();
    }
  }
  std::vector<size_t> wrong(n + 1, 1);
  std::vector<uint8_t> scratch(64);
  EXPECT_EQ(comm.Allgatherv(scratch.data(), scratch.data(), wrong, DataType::kUInt8).code(),
            StatusCode::kInvalidArgument);
}

void CheckBroadcastAlltoallBarrier(Communicator& comm) {
  const int n = comm.size();
  for (DataType t : kAllDataTypes) {
    for (int root = 0; root < n; ++root) {
      for (bool in_place : {false, true}) {
        const size_t count = 37;
        auto in = MakeInput(t, ReduceOp::kSum, comm.rank() + 10, count);
        std::vector<uint8_t> out(in.size(), 0xee);
        void* dst = in_place ? in.data() : out.data();
        ASSERT_OK(comm.Broadcast(in.data(), dst, count, t, root));
        auto want = MakeInput(t, ReduceOp::kSum, root + 10, count);
        ASSERT_EQ(std::memcmp(dst, want.data(), want.size()), 0)
            << "broadcast " << DataTypeName(t) << " root " << root << (in_place ? " in-place" : "");
      }
    }
  }
  EXPECT_EQ(comm.Broadcast(nullptr, nullptr, 0, DataType::kUInt8, n).code(), StatusCode::kInvalidArgument);

  const size_t count = 5;
  std::vector<int32_t> in(count * n), out(count * n, -1);
  for (int j = 0; j < n; ++j) {
    for (size_t k = 0; k < count; ++k) in[j * count + k] = comm.rank() * 1000 + j * 10 + static_cast<int>(k);
  }
  ASSERT_OK(comm.Alltoall(in.data(), out.data(), count, DataType::kInt32));
  for (int i = 0; i < n; ++i) {
    for (size_t k = 0; k < count; ++k) {
      ASSERT_EQ(out[i * count + k], i * 1000 + comm.rank() * 10 + static_cast<int>(k));
    }
  }
  EXPECT_OK(comm.Barrier());
}

class GlooCollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectivesTest, EveryCollectiveMatchesTheReference) {
  testing::WorldOptions options;
  options.size = GetParam();
  auto outcomes = testing::RunWorld(options, [](RankContext& ctx) {
    auto comm = MakeWorld(ctx);
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(comm->rank(), ctx.rank);
    EXPECT_EQ(comm->size(), ctx.size);
    CheckAllreduce(*comm);
    CheckReduceScatter(*comm);
    CheckAllgather(*comm);
    CheckBroadcastAlltoallBarrier(*comm);
    EXPECT_OK(comm->health());
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << testing::DescribeFailures(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooCollectivesTest, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "np" + std::to_string(info.param); });

}  // namespace
}  // namespace ringmaster::runtime
