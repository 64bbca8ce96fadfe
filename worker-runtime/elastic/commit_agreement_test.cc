// The commit agreement (worker-runtime/README.md, "Commit agreement") through ElasticDriver::Run over real Gloo
// on loopback: a step whose collective returned OK on a communicator that was aborted meanwhile -- NCCL's kernel
// stopped by the abort flag leaves its stream idle with partial results -- is never committed anywhere, neither by
// the rank that saw it nor by its peers, whose own results were right; every agreed step is the same state on every
// rank; and the model at the end counts every step once.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/runtime/world.h"
#include "worker-runtime/testing/forwarding_communicator.h"
#include "worker-runtime/testing/scripted_source.h"

namespace ringmaster::elastic {
namespace {

using testing::FreePort;
using testing::ScriptedSource;
using namespace std::chrono_literals;

api::Membership Record(int64_t gen, const std::vector<std::pair<std::string, int>>& members) {
  api::Membership m;
  m.generation = gen;
  m.reason = "JobStarted";
  m.coordinator = "127.0.0.1:" + std::to_string(members[0].second);
  for (size_t r = 0; r < members.size(); ++r)
    m.members.push_back({members[r].first, "uid-" + members[r].first, static_cast<int32_t>(r), "127.0.0.1", "node"});
  return m;
}

// A Gloo communicator whose `garbage_at`-th int32 allreduce of one element (the step's) completes "successfully"
// with a wrong sum while the communicator reports itself broken (health()): NCCL's kernel stopped by the abort
// flag, its stream idle. Its calls go on working, as the NCCL path's Gloo control channel does: only the health
// check can tell.
class PartialResultOnce : public runtime_testing::ForwardingCommunicator {
 public:
  PartialResultOnce(std::unique_ptr<comm::Communicator> inner, int garbage_at, std::atomic<int>* seen)
      : ForwardingCommunicator(std::move(inner)), garbage_at_(garbage_at), seen_(seen) {}
  Status health() const override {
    if (broken_.load()) return AbortedError("the kernel stopped on the abort flag; its stream is idle");
    return ForwardingCommunicator::health();
  }

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override {
    Status s = ForwardingCommunicator::DoAllreduce(in, out, count, type, op);
    if (s.ok() && count == 1 && type == common::DataType::kInt32 && ++steps_ == garbage_at_) {
      *static_cast<int32_t*>(out) += 1000;  // partial results, and yet OK
      broken_.store(true);
      seen_->fetch_add(1);
    }
    return s;
  }

 private:
  const int garbage_at_;
  std::atomic<int>* const seen_;
  std::atomic<bool> broken_{false};
  int steps_ = 0;  // the engine thread's only
};

// One worker whose model is the sum of every step's allreduce of 1 (Gloo: data and control are one communicator).
// `garbage_at` > 0: its first generation's communicator returns a partial result at that step.
struct Worker {
  Worker(std::string worker_id, int store_port, membership::MembershipSource* source, int garbage_at)
      : id(std::move(worker_id)),
        state([this] { return std::to_string(model); },
              [this](std::string_view b) {
                model = std::stoll(std::string(b));
                return Status::Ok();
              }),
        driver(Options(store_port, garbage_at), source, &state) {}
  ElasticOptions Options(int port, int garbage_at) {
    ElasticOptions o;
    o.worker_id = id;
    o.secret = "s";
    o.store_port = static_cast<uint16_t>(port);
    o.rebuild_timeout = 2s;
    o.runtime.backend = comm::Backend::kGloo;
    if (garbage_at > 0) {
      o.runtime.communicator_factory =
          [this, garbage_at](std::shared_ptr<store::Store> store, int rank, int size,
                             const runtime::WorldOptions& wo) -> StatusOr<std::unique_ptr<comm::Communicator>> {
        RINGMASTER_ASSIGN_OR_RETURN(auto inner, runtime::CreateWorldCommunicator(std::move(store), rank, size, wo));
        if (built.fetch_add(1) > 0) return inner;  // the rebuilt generations are healthy
        return std::unique_ptr<comm::Communicator>(new PartialResultOnce(std::move(inner), garbage_at, &garbage));
      };
    }
    o.log = [this](LogLevel, std::string_view line) {
      std::lock_guard lock(mu);
      log += "  " + std::string(line) + "\n";
    };
    o.on_agreed = [this](int64_t step, uint32_t crc) {
      std::lock_guard lock(mu);
      agreed[step] = crc;
    };
    return o;
  }
  void Train(int64_t steps) {
    thread = std::thread([this, steps] {
      result = driver.Run(steps, [this](const StepContext& ctx) -> StatusOr<data::SampleCursor> {
        std::this_thread::sleep_for(5ms);
        const int32_t one = 1;
        int32_t sum = 0;
        RINGMASTER_RETURN_IF_ERROR(
            ctx.rt->Allreduce("step", &one, &sum, 1, common::DataType::kInt32, common::ReduceOp::kSum));
        model += sum;
        return data::SampleCursor{0, static_cast<uint64_t>(ctx.step + 1)};
      });
    });
  }

  std::string id;
  int64_t model = 0;
  ElasticState state;
  std::atomic<int> built{0};
  std::atomic<int> garbage{0};  // partial results handed out
  std::mutex mu;
  std::map<int64_t, uint32_t> agreed;  // guarded by mu: on_agreed's record
  std::string log;                     // guarded by mu: the driver's lines
  ElasticDriver driver;
  std::thread thread;
  StatusOr<ElasticResult> result = InternalError("not run");
};

TEST(CommitAgreementTest, AStepWithAPartialResultOnOneRankIsNeverCommittedAnywhere) {
  ScriptedSource source;
  const int p0 = FreePort(), p1 = FreePort();
  constexpr int64_t kSteps = 12;
  // Rank 0 sees the partial result: the rank a restore broadcasts from when both hold the same step.
  Worker w0("w0", p0, &source, /*garbage_at=*/5), w1("w1", p1, &source, 0);
  source.Publish(Record(1, {{"w0", p0}, {"w1", p1}}));
  w0.Train(kSteps);
  w1.Train(kSteps);
  w0.thread.join();
  w1.thread.join();
  source.Stop();
  ASSERT_OK(w0.result) << w0.result.status() << "\nw0:\n" << w0.log;
  ASSERT_OK(w1.result) << w1.result.status() << "\nw1:\n" << w1.log;
  ASSERT_EQ(w0.garbage.load(), 1) << "the partial result was never handed out";
  // Every step counted once at world size 2: a committed garbage step would add 1000 on rank 0, and a restore
  // would broadcast it to rank 1.
  EXPECT_EQ(w0.model, 2 * kSteps);
  EXPECT_EQ(w1.model, 2 * kSteps);
  std::lock_guard l0(w0.mu), l1(w1.mu);
  ASSERT_FALSE(w0.agreed.empty());
  EXPECT_EQ(w0.agreed.rbegin()->first, kSteps);
  for (const auto& [step, crc] : w0.agreed) {
    auto other = w1.agreed.find(step);
    if (other != w1.agreed.end()) {
      EXPECT_EQ(other->second, crc) << "step " << step << " differs between the ranks";
    }
  }
}

}  // namespace
}  // namespace ringmaster::elastic
