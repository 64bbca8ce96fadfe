// A node announcing its loss: a disruption taint (--disruption-taints; in production Karpenter's
// karpenter.sh/disrupted, AWS's spot interruption notice, GKE's impending termination) put on the real node
// of a member mid-run. Every worker on that node leaves in a Disrupted generation at the step boundary rank 0
// chose -- alive, its work committed, exiting 0 -- and is replaced on the other node (the taint is NoSchedule),
// before anything is lost: no step rolled back, no restart counted, the exact weights, every sample once.
// It taints a real node the other tests share, so ctest runs it alone.
#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

constexpr char kNoticeTaint[] = "ringmaster.test/spot-notice";

class DisruptionNoticeE2eTest : public ElasticWorkersE2eTest {
 protected:
  void SetUp() override {
    operator_args_ = {std::string("--disruption-taints=") + kNoticeTaint};
    ElasticWorkersE2eTest::SetUp();
  }
  void TearDown() override {
    if (!tainted_.empty()) (void)cluster_.Kubectl({"taint", "node", tainted_, std::string(kNoticeTaint) + "-"});
    ElasticWorkersE2eTest::TearDown();
  }
  std::string tainted_;  // the node to untaint
};

TEST_F(DisruptionNoticeE2eTest, WorkersOnANodeWithANoticeTaintLeaveAliveAndAreReplacedElsewhere) {
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const int64_t generation = m.value("generation", int64_t{0});
  tainted_ = m["members"][1].value("node", "");
  ASSERT_FALSE(tainted_.empty()) << m.dump();
  std::vector<std::string> leaving, staying;
  for (const auto& member : m["members"])
    (member.value("node", "") == tainted_ ? leaving : staying).push_back(member.value("pod", ""));

  auto tainted = cluster_.Kubectl({"taint", "node", tainted_, std::string(kNoticeTaint) + "=reclaim:NoSchedule"});
  ASSERT_COMMAND_OK(tainted) << (tainted.ok() ? tainted->err : "");

  std::string disrupted = WaitForMembershipEvent("Disrupted", static_cast<int>(staying.size()));
  EXPECT_NE(disrupted.find("generation " + std::to_string(generation + 1) + ","), std::string::npos) << disrupted;
  for (const auto& pod : leaving) {
    EXPECT_NE(disrupted.find(pod), std::string::npos) << disrupted;
    Status exited = WaitFor(pod + " to exit", seconds(30), [&](std::string* last) {
      auto procs = ProcessesOf(pod);
      *last = procs.empty() ? "no pod" : (procs[0].ended ? "exit " + std::to_string(procs[0].exit_code) : "running");
      return !procs.empty() && (procs[0].ended || procs[0].deleted);
    });
    ASSERT_OK(exited) << exited;
    EXPECT_EQ(ProcessesOf(pod)[0].exit_code, 0) << pod << " was killed instead of leaving";
  }
  for (const auto& pod : staying)
    EXPECT_EQ(StepsRolledBackAfter(pod, generation), 0) << pod << " rolled back steps at the notice";

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  for (const auto& pod : leaving) EXPECT_FALSE(finishers.count(pod)) << pod << " left but wrote final weights";
  for (const auto& p : pods_->Pods()) {
    if (std::find(leaving.begin(), leaving.end(), p.pod) == leaving.end() && p.node == tainted_)
      ADD_FAILURE() << p.pod << " was placed on the node that announced its loss";
  }
  EXPECT_EQ(Job()["status"].value("restartCount", -1), 0) << "a disruption was counted as a failure";
}

}  // namespace
}  // namespace ringmaster::testing
