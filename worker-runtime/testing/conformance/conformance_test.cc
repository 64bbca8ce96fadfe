// The communicator conformance suite: every case of the Communicator contract
// (comm/communicator.h) on every backend the binary links (backend.h) and every
// world size it lists -- each collective in every data type (and reduce op),
// out of place and in its in-place form, zero counts, every root, and every
// invalid argument, which must be refused the same way by every backend and
// leave the communicator usable. Ranks are forked processes on loopback
// (testing/multiprocess.h); buffers live in the backend's memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>

#include "base/status_test_macros.h"
#include "worker-runtime/common/pattern.h"
#include "worker-runtime/testing/conformance/backend.h"
#include "worker-runtime/testing/multiprocess.h"

namespace ringmaster::conformance {
namespace {

constexpr size_t kCounts[] = {1, 37, 4099};

// A buffer in the backend's memory (host or device), filled and read from the host.
class Buffer {
 public:
  Buffer(memory::Memory& memory, size_t bytes) : memory_(memory), bytes_(bytes) {
    auto p = memory_.Allocate(bytes_ > 0 ? bytes_ : 1);
    EXPECT_OK(p);
    if (p.ok()) ptr_ = static_cast<uint8_t*>(*p);
  }
  Buffer(memory::Memory& memory, const std::vector<uint8_t>& host) : Buffer(memory, host.size()) { Write(host); }
  ~Buffer() {
    if (ptr_) memory_.Free(ptr_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* get() const { return ptr_; }
  void Write(const std::vector<uint8_t>& host, size_t offset = 0) {
    ASSERT_LE(offset + host.size(), bytes_);
    EXPECT_OK(memory_.Upload(ptr_ + offset, host.data(), host.size()));
  }
  std::vector<uint8_t> Read(size_t bytes, size_t offset = 0) const {
    std::vector<uint8_t> host(bytes);
    EXPECT_OK(memory_.Download(host.data(), ptr_ + offset, bytes));
    return host;
  }

 private:
  memory::Memory& memory_;
  const size_t bytes_;
  uint8_t* ptr_ = nullptr;
};

std::vector<uint8_t> Filled(size_t bytes) { return std::vector<uint8_t>(bytes, 0xee); }

struct Param {
  size_t backend = 0;
  int size = 1;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << ConformanceBackends()[p.backend].name << " with " << p.size << " ranks";
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  const auto& backends = ConformanceBackends();
  for (size_t b = 0; b < backends.size(); ++b) {
    for (int size : backends[b].world_sizes) params.push_back({b, size});
  }
  return params;
}

class CommunicatorConformanceTest : public ::testing::TestWithParam<Param> {
 protected:
  const ConformanceBackend& backend() const { return ConformanceBackends()[GetParam().backend]; }

  void SetUp() override {
    // A backend this binary was asked to test but that cannot run here is a failure, not a skip.
    if (std::string why = backend().unavailable(); !why.empty()) FAIL() << why;
  }

  // Runs body on every rank of a fresh world of the backend; afterwards the communicator
  // must still be healthy unless the body breaks it on purpose.
  void OnEveryRank(const std::function<void(comm::Communicator&, memory::Memory&)>& body, bool healthy_after = true) {
    runtime_testing::WorldOptions options;
    options.size = GetParam().size;
    const ConformanceBackend& b = backend();
    auto outcomes = runtime_testing::RunWorld(options, [&](runtime::RankContext& ctx) {
      auto world = b.create(ctx);
      ASSERT_OK(world);
      ASSERT_EQ(world->comm->rank(), ctx.rank);
      ASSERT_EQ(world->comm->size(), ctx.size);
      body(*world->comm, *world->memory);
      if (healthy_after) {
        EXPECT_OK(world->comm->health());
      }
    });
    for (const auto& o : outcomes) EXPECT_OK(o) << runtime::DescribeFailures(outcomes);
  }
};

TEST_P(CommunicatorConformanceTest, Allreduce) {
  const auto& exact_average = backend().exact_average;
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    for (common::DataType t : common::kAllDataTypes) {
      for (common::ReduceOp op : common::kAllReduceOps) {
        const bool check = op != common::ReduceOp::kAvg || exact_average(t);
        for (size_t count : kCounts) {
          for (bool in_place : {false, true}) {
            const auto input = common::MakeInput(t, op, comm.rank(), count);
            Buffer in(memory, input), out(memory, Filled(input.size()));
            uint8_t* dst = in_place ? in.get() : out.get();
            ASSERT_OK(comm.Allreduce(in.get(), dst, count, t, op));
            const auto got = in_place ? in.Read(input.size()) : out.Read(input.size());
            const auto want = common::ReferenceReduce(t, op, n, count);
            if (check) {
              ASSERT_EQ(common::CountMismatches(t, got.data(), want.data(), count), 0u)
                  << common::DataTypeName(t) << " " << common::ReduceOpName(op) << " count " << count
                  << (in_place ? " in-place" : "");
            }
            if (!in_place) {
              ASSERT_EQ(in.Read(input.size()), input) << "allreduce modified its input";
            }
          }
        }
      }
    }
    // A buffer larger than Gloo's 1 MiB segment, so a ring runs several segments per rank.
    const size_t big = 300001;
    Buffer buf(memory, common::MakeInput(common::DataType::kFloat32, common::ReduceOp::kSum, comm.rank(), big));
    ASSERT_OK(comm.Allreduce(buf.get(), buf.get(), big, common::DataType::kFloat32, common::ReduceOp::kSum));
    const auto want = common::ReferenceReduce(common::DataType::kFloat32, common::ReduceOp::kSum, n, big);
    EXPECT_EQ(common::CountMismatches(common::DataType::kFloat32, buf.Read(want.size()).data(), want.data(), big), 0u);
  });
}

TEST_P(CommunicatorConformanceTest, ReduceScatter) {
  const auto& exact_average = backend().exact_average;
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    for (common::DataType t : common::kAllDataTypes) {
      for (common::ReduceOp op : common::kAllReduceOps) {
        const bool check = op != common::ReduceOp::kAvg || exact_average(t);
        for (size_t count : {size_t{1}, size_t{37}}) {
          for (bool in_place : {false, true}) {
            const size_t bytes = count * common::DataTypeSize(t);
            Buffer in(memory, common::MakeInput(t, op, comm.rank(), count * n)), out(memory, Filled(bytes));
            uint8_t* dst = in_place ? in.get() : out.get();
            ASSERT_OK(comm.ReduceScatter(in.get(), dst, count, t, op));
            const auto got = in_place ? in.Read(bytes) : out.Read(bytes);
            const auto want = common::ReferenceReduce(t, op, n, count, count * comm.rank());
            if (check) {
              ASSERT_EQ(common::CountMismatches(t, got.data(), want.data(), count), 0u)
                  << common::DataTypeName(t) << " " << common::ReduceOpName(op) << " count " << count
                  << (in_place ? " in-place" : "");
            }
          }
        }
      }
    }
  });
}

TEST_P(CommunicatorConformanceTest, Allgather) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    for (common::DataType t : common::kAllDataTypes) {
      for (size_t count : kCounts) {
        const size_t block = count * common::DataTypeSize(t);
        const auto input = common::MakeInput(t, common::ReduceOp::kSum, comm.rank(), count);
        std::vector<uint8_t> want;
        for (int r = 0; r < n; ++r) {
          auto b = common::MakeInput(t, common::ReduceOp::kSum, r, count);
          want.insert(want.end(), b.begin(), b.end());
        }
        Buffer in(memory, input), out(memory, Filled(block * n));
        ASSERT_OK(comm.Allgather(in.get(), out.get(), count, t));
        ASSERT_EQ(out.Read(block * n), want) << common::DataTypeName(t) << " count " << count;
        // In place: this rank's block of out already holds its input.
        Buffer inplace(memory, Filled(block * n));
        inplace.Write(input, block * comm.rank());
        ASSERT_OK(comm.Allgather(inplace.get() + block * comm.rank(), inplace.get(), count, t));
        ASSERT_EQ(inplace.Read(block * n), want) << "in-place " << common::DataTypeName(t) << " count " << count;
      }
    }
  });
}

TEST_P(CommunicatorConformanceTest, AllgathervWithUnevenCounts) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    std::vector<size_t> counts(n);
    for (int r = 0; r < n; ++r) counts[r] = r == 1 ? 0 : static_cast<size_t>(3 + 5 * r);  // rank 1 sends nothing
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    const size_t below = std::accumulate(counts.begin(), counts.begin() + comm.rank(), size_t{0});
    for (common::DataType t : common::kAllDataTypes) {
      const size_t es = common::DataTypeSize(t);
      std::vector<uint8_t> want;
      for (int r = 0; r < n; ++r) {
        auto b = common::MakeInput(t, common::ReduceOp::kSum, r, counts[r]);
        want.insert(want.end(), b.begin(), b.end());
      }
      const auto input = common::MakeInput(t, common::ReduceOp::kSum, comm.rank(), counts[comm.rank()]);
      Buffer in(memory, input), out(memory, Filled(total * es));
      ASSERT_OK(comm.Allgatherv(in.get(), out.get(), counts, t));
      ASSERT_EQ(out.Read(total * es), want) << common::DataTypeName(t);
      Buffer inplace(memory, Filled(total * es));
      inplace.Write(input, below * es);
      ASSERT_OK(comm.Allgatherv(inplace.get() + below * es, inplace.get(), counts, t));
      ASSERT_EQ(inplace.Read(total * es), want) << "in-place " << common::DataTypeName(t);
    }
  });
}

TEST_P(CommunicatorConformanceTest, BroadcastFromEveryRoot) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    const size_t count = 37;
    for (common::DataType t : common::kAllDataTypes) {
      for (int root = 0; root < n; ++root) {
        const auto want = common::MakeInput(t, common::ReduceOp::kSum, root + 10, count);
        for (bool in_place : {false, true}) {
          Buffer in(memory, common::MakeInput(t, common::ReduceOp::kSum, comm.rank() + 10, count)),
              out(memory, Filled(want.size()));
          uint8_t* dst = in_place ? in.get() : out.get();
          ASSERT_OK(comm.Broadcast(in.get(), dst, count, t, root));
          ASSERT_EQ(in_place ? in.Read(want.size()) : out.Read(want.size()), want)
              << common::DataTypeName(t) << " root " << root << (in_place ? " in-place" : "");
        }
        // Non-roots' input is ignored: null is fine there.
        Buffer in(memory, common::MakeInput(t, common::ReduceOp::kSum, comm.rank() + 10, count)),
            out(memory, Filled(want.size()));
        ASSERT_OK(comm.Broadcast(comm.rank() == root ? in.get() : nullptr, out.get(), count, t, root));
        ASSERT_EQ(out.Read(want.size()), want)
            << common::DataTypeName(t) << " root " << root << " null input elsewhere";
      }
    }
  });
}

// Element k of block j that rank `from` sends: distinct for every (from, j, k) in every dtype.
std::vector<uint8_t> AlltoallInput(common::DataType t, int from, int n, size_t count) {
  std::vector<uint8_t> all;
  for (int j = 0; j < n; ++j) {
    auto block = common::MakeInput(t, common::ReduceOp::kSum, from, count, static_cast<size_t>(j) * count);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

TEST_P(CommunicatorConformanceTest, Alltoall) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    for (common::DataType t : common::kAllDataTypes) {
      for (size_t count : {size_t{1}, size_t{5}, size_t{4099}}) {
        const size_t block = count * common::DataTypeSize(t);
        std::vector<uint8_t> want;  // block i from rank i: its block rank()
        for (int i = 0; i < n; ++i) {
          auto from = AlltoallInput(t, i, n, count);
          want.insert(want.end(), from.begin() + block * comm.rank(), from.begin() + block * (comm.rank() + 1));
        }
        for (bool in_place : {false, true}) {
          Buffer in(memory, AlltoallInput(t, comm.rank(), n, count)), out(memory, Filled(block * n));
          uint8_t* dst = in_place ? in.get() : out.get();
          ASSERT_OK(comm.Alltoall(in.get(), dst, count, t));
          ASSERT_EQ(in_place ? in.Read(block * n) : out.Read(block * n), want)
              << common::DataTypeName(t) << " count " << count << (in_place ? " in-place" : "");
        }
      }
    }
  });
}

TEST_P(CommunicatorConformanceTest, BarrierAndSplit) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    ASSERT_OK(comm.Barrier());
    std::vector<int> evens;
    for (int r = 0; r < comm.size(); r += 2) evens.push_back(r);
    auto sub = comm.Split(evens, "evens");
    ASSERT_OK(sub);
    ASSERT_EQ(*sub != nullptr, comm.rank() % 2 == 0);
    if (*sub) {
      comm::Communicator& set = **sub;
      EXPECT_EQ(set.rank(), comm.rank() / 2);
      EXPECT_EQ(set.size(), static_cast<int>(evens.size()));
      Buffer buf(memory, common::MakeInput(common::DataType::kInt32, common::ReduceOp::kSum, set.rank(), 7));
      ASSERT_OK(set.Allreduce(buf.get(), buf.get(), 7, common::DataType::kInt32, common::ReduceOp::kSum));
      const auto want = common::ReferenceReduce(common::DataType::kInt32, common::ReduceOp::kSum, set.size(), 7);
      EXPECT_EQ(buf.Read(want.size()), want);
    }
    ASSERT_OK(comm.Barrier());
  });
}

TEST_P(CommunicatorConformanceTest, ZeroCountsMoveNothingAndAcceptNullBuffers) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const common::DataType t = common::DataType::kFloat32;
    EXPECT_OK(comm.Allreduce(nullptr, nullptr, 0, t, common::ReduceOp::kSum));
    EXPECT_OK(comm.Allgather(nullptr, nullptr, 0, t));
    EXPECT_OK(comm.Allgatherv(nullptr, nullptr, std::vector<size_t>(comm.size(), 0), t));
    EXPECT_OK(comm.Broadcast(nullptr, nullptr, 0, t, comm.size() - 1));
    EXPECT_OK(comm.ReduceScatter(nullptr, nullptr, 0, t, common::ReduceOp::kMax));
    EXPECT_OK(comm.Alltoall(nullptr, nullptr, 0, t));
    // A real collective afterwards: nobody is out of step.
    Buffer buf(memory, common::MakeInput(t, common::ReduceOp::kSum, comm.rank(), 3));
    ASSERT_OK(comm.Allreduce(buf.get(), buf.get(), 3, t, common::ReduceOp::kSum));
    const auto want = common::ReferenceReduce(t, common::ReduceOp::kSum, comm.size(), 3);
    EXPECT_EQ(buf.Read(want.size()), want);
  });
}

void ExpectInvalid(const Status& s, const char* what) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s;
}

TEST_P(CommunicatorConformanceTest, InvalidArgumentsAreRefusedAndLeaveItUsable) {
  OnEveryRank([&](comm::Communicator& comm, memory::Memory& memory) {
    const int n = comm.size();
    const size_t count = 8;
    const common::DataType t = common::DataType::kFloat32;
    const auto bad_type = static_cast<common::DataType>(99);
    const auto bad_op = static_cast<common::ReduceOp>(99);
    const size_t huge = std::numeric_limits<size_t>::max() / 2;
    Buffer a(memory, count * 4 * n * 2), b(memory, count * 4 * n * 2);
    uint8_t* in = a.get();
    uint8_t* out = b.get();
    uint8_t* shifted = a.get() + 4;  // overlaps `in` one element on: never an in-place form

    ExpectInvalid(comm.Allreduce(nullptr, out, count, t, common::ReduceOp::kSum), "allreduce null in");
    ExpectInvalid(comm.Allreduce(in, nullptr, count, t, common::ReduceOp::kSum), "allreduce null out");
    ExpectInvalid(comm.Allreduce(in, out, count, bad_type, common::ReduceOp::kSum), "allreduce bad type");
    ExpectInvalid(comm.Allreduce(in, out, count, t, bad_op), "allreduce bad op");
    ExpectInvalid(comm.Allreduce(in, out, huge, common::DataType::kFloat64, common::ReduceOp::kSum),
                  "allreduce overflow");
    ExpectInvalid(comm.Allreduce(shifted, in, count, t, common::ReduceOp::kSum), "allreduce partial overlap");

    ExpectInvalid(comm.Allgather(nullptr, out, count, t), "allgather null in");
    ExpectInvalid(comm.Allgather(in, nullptr, count, t), "allgather null out");
    ExpectInvalid(comm.Allgather(in, out, count, bad_type), "allgather bad type");
    ExpectInvalid(comm.Allgather(in, out, huge, t), "allgather overflow");
    ExpectInvalid(comm.Allgather(shifted, in, count, t), "allgather overlap off its block");

    std::vector<size_t> counts(n, count);
    ExpectInvalid(comm.Allgatherv(in, out, std::vector<size_t>(n + 1, 1), t), "allgatherv too many counts");
    ExpectInvalid(comm.Allgatherv(in, out, {}, t), "allgatherv no counts");
    ExpectInvalid(comm.Allgatherv(nullptr, out, counts, t), "allgatherv null in");
    ExpectInvalid(comm.Allgatherv(in, nullptr, counts, t), "allgatherv null out");
    ExpectInvalid(comm.Allgatherv(in, out, counts, bad_type), "allgatherv bad type");
    ExpectInvalid(comm.Allgatherv(in, out, std::vector<size_t>(n, huge), t), "allgatherv overflow");
    ExpectInvalid(comm.Allgatherv(shifted, in, counts, t), "allgatherv overlap off its block");

    ExpectInvalid(comm.Broadcast(in, out, count, t, -1), "broadcast root -1");
    ExpectInvalid(comm.Broadcast(in, out, count, t, n), "broadcast root = size");
    ExpectInvalid(comm.Broadcast(nullptr, nullptr, 0, t, n), "broadcast root = size, zero count");
    ExpectInvalid(comm.Broadcast(in, nullptr, count, t, 0), "broadcast null out");
    ExpectInvalid(comm.Broadcast(in, out, count, bad_type, 0), "broadcast bad type");
    ExpectInvalid(comm.Broadcast(in, out, huge, common::DataType::kFloat64, 0), "broadcast overflow");
    if (comm.rank() == 0) {
      ExpectInvalid(comm.Broadcast(nullptr, out, count, t, 0), "broadcast null in on the root");
      ExpectInvalid(comm.Broadcast(shifted, in, count, t, 0), "broadcast partial overlap on the root");
    }

    ExpectInvalid(comm.ReduceScatter(nullptr, out, count, t, common::ReduceOp::kSum), "reduce-scatter null in");
    ExpectInvalid(comm.ReduceScatter(in, nullptr, count, t, common::ReduceOp::kSum), "reduce-scatter null out");
    ExpectInvalid(comm.ReduceScatter(in, out, count, bad_type, common::ReduceOp::kSum), "reduce-scatter bad type");
    ExpectInvalid(comm.ReduceScatter(in, out, count, t, bad_op), "reduce-scatter bad op");
    ExpectInvalid(comm.ReduceScatter(in, out, huge, t, common::ReduceOp::kSum), "reduce-scatter overflow");
    ExpectInvalid(comm.ReduceScatter(in, shifted, count, t, common::ReduceOp::kSum), "reduce-scatter partial overlap");

    ExpectInvalid(comm.Alltoall(nullptr, out, count, t), "alltoall null in");
    ExpectInvalid(comm.Alltoall(in, nullptr, count, t), "alltoall null out");
    ExpectInvalid(comm.Alltoall(in, out, count, bad_type), "alltoall bad type");
    ExpectInvalid(comm.Alltoall(in, out, huge, t), "alltoall overflow");
    ExpectInvalid(comm.Alltoall(shifted, in, count, t), "alltoall partial overlap");

    ExpectInvalid(comm.Split({}, "empty").status(), "split of no ranks");
    ExpectInvalid(comm.Split({n}, "outside").status(), "split outside the world");
    ExpectInvalid(comm.Split({0, 0}, "twice").status(), "split naming a rank twice");
    ExpectInvalid(comm.Shrink({}, "none").status(), "shrink excluding nobody");
    ExpectInvalid(comm.Shrink({comm.rank()}, "self").status(), "shrink excluding this rank");
    ExpectInvalid(comm.Shrink({n}, "outside").status(), "shrink excluding a rank outside the world");

    // Still usable, and every rank is in step.
    EXPECT_OK(comm.health());
    ASSERT_OK(comm.Barrier());
    Buffer buf(memory, common::MakeInput(t, common::ReduceOp::kSum, comm.rank(), count));
    ASSERT_OK(comm.Allreduce(buf.get(), buf.get(), count, t, common::ReduceOp::kSum));
    const auto want = common::ReferenceReduce(t, common::ReduceOp::kSum, n, count);
    EXPECT_EQ(buf.Read(want.size()), want);
  });
}

TEST_P(CommunicatorConformanceTest, AbortedCommunicatorRefusesEveryCall) {
  OnEveryRank(
      [&](comm::Communicator& comm, memory::Memory& memory) {
        ASSERT_OK(comm.Barrier());
        comm.Abort("test over");
        Status health = comm.health();
        EXPECT_EQ(health.code(), StatusCode::kAborted);
        EXPECT_NE(health.message().find("test over"), std::string::npos) << health;
        Buffer buf(memory, 64 * comm.size()), other(memory, 64 * comm.size());
        void* p = buf.get();
        const common::DataType t = common::DataType::kFloat32;
        EXPECT_EQ(comm.Allreduce(p, p, 4, t, common::ReduceOp::kSum).code(), StatusCode::kAborted);
        EXPECT_EQ(comm.Allgather(p, p, 0, t).code(), StatusCode::kAborted);
        EXPECT_EQ(comm.Allgatherv(p, other.get(), std::vector<size_t>(comm.size(), 1), t).code(), StatusCode::kAborted);
        EXPECT_EQ(comm.Broadcast(p, p, 4, t, 0).code(), StatusCode::kAborted);
        EXPECT_EQ(comm.ReduceScatter(p, p, 4, t, common::ReduceOp::kSum).code(), StatusCode::kAborted);
        EXPECT_EQ(comm.Alltoall(p, p, 4, t).code(), StatusCode::kAborted);
        EXPECT_EQ(comm.Barrier().code(), StatusCode::kAborted);
        EXPECT_EQ(comm.Split({0}, "late").status().code(), StatusCode::kAborted);
        // Arguments are still checked first.
        EXPECT_EQ(comm.Broadcast(p, p, 4, t, -1).code(), StatusCode::kInvalidArgument);
      },
      /*healthy_after=*/false);
}

INSTANTIATE_TEST_SUITE_P(Backends, CommunicatorConformanceTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return ConformanceBackends()[info.param.backend].name + "_np" +
                                  std::to_string(info.param.size);
                         });

}  // namespace
}  // namespace ringmaster::conformance
