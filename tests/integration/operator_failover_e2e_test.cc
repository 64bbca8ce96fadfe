// The leading operator crashing in the middle of a change, under a real elastic job
// (elastic_workers_fixture.h, its workers on the cluster's real nodes): two operator replicas with leader election (a 4
// s lease), a `kubectl scale` down or up, and the leader SIGKILLed right after it. The standby must take the lease and
// finish the change it never saw begin, from the cluster's state alone (reconcile is level-based):
//   * the scale makes exactly one generation, even if the dead leader had already published it, and no
//     generation is ever shown twice or out of order (MembershipHistory, a watch of the test's own);
//   * a scale-up creates exactly one new worker pod (names are deterministic, so a half-done create is
//     found, not repeated); a scale-down lets the removed worker exit 0 by itself;
//   * the job ends with the one-process weights and every sample committed once per epoch.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/replicated_operator_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
class OperatorFailoverE2eTest : public ReplicatedOperatorWorkersTest {
 protected:
  void SetUp() override {
    ReplicatedOperatorWorkersTest::SetUp();
    // Slower steps (48 s in all): the handover and the change must land before the 120 steps end.
    *(std::find(workload_.args.begin(), workload_.args.end(), "--step-delay-ms") + 1) = "400";
  }

  // `kubectl scale` to `replicas`, then the leader SIGKILLed at once (its lease is not released); returns
  // when the standby holds the lease, having printed how long the handover took.
  void ScaleAndKillTheLeader(int replicas) {
    ASSERT_OK(replicas_.Holder().status());
    auto scaled = cluster_.Kubectl({"scale", "-n", ns_, "tj/" + kJob, "--replicas=" + std::to_string(replicas)});
    ASSERT_COMMAND_OK(scaled) << (scaled.ok() ? scaled->err : "");
    auto took = replicas_.KillLeader();
    ASSERT_OK(took) << took.status();
    std::cerr << "the leader killed after `kubectl scale --replicas=" << replicas << "`; the standby took the lease in "
              << *took << " s (lease 4 s)\n";
  }

  // The job once its status shows membership generation `generation` or a later one. (Not the Event: the
  // dead leader may have published the generation and died before recording it; Events are best effort.)
  json WaitForGeneration(int64_t generation) {
    return WaitForJob("membership generation " + std::to_string(generation), seconds(30),
                      [&](const json& j) { return Membership(j).value("generation", int64_t{0}) >= generation; });
  }

  // The worker pods' names and uids that exist now.
  std::map<std::string, std::string> WorkerPods() {
    std::map<std::string, std::string> out;
    auto pods = cluster_.KubectlJson({"get", "pods", "-n", ns_, "-l", std::string(api::kJobNameLabel) + "=" + kJob});
    if (!pods.ok()) return out;
    for (const auto& p : (*pods)["items"]) out[p["metadata"].value("name", "")] = p["metadata"].value("uid", "");
    return out;
  }
};

TEST_F(OperatorFailoverE2eTest, LeaderKilledDuringAScaleDownAndTheStandbyFinishesIt) {
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const std::string leaving = m["members"][2].value("pod", "");
  const int64_t generation = m.value("generation", int64_t{0});

  ScaleAndKillTheLeader(2);
  ASSERT_FALSE(HasFatalFailure());
  const json scaled = WaitForGeneration(generation + 1);
  EXPECT_EQ(Membership(scaled).value("reason", ""), "ScaledDown") << Membership(scaled).dump();
  EXPECT_EQ(Membership(scaled).value("worldSize", 0), 2) << Membership(scaled).dump();
  EXPECT_NE(Membership(scaled).value("message", "").find(leaving), std::string::npos) << Membership(scaled).dump();
  Status exited = WaitFor("the removed worker to exit", seconds(30), [&](std::string* last) {
    auto procs = ProcessesOf(leaving);
    *last = procs.empty() ? "no pod" : (procs[0].ended ? "exit " + std::to_string(procs[0].exit_code) : "running");
    return !procs.empty() && (procs[0].ended || procs[0].deleted);
  });
  ASSERT_OK(exited) << exited;
  EXPECT_EQ(ProcessesOf(leaving)[0].exit_code, 0) << ProcessesOf(leaving)[0].reason;

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_EQ(finishers.size(), 2u);
  EXPECT_FALSE(finishers.count(leaving)) << "a worker that left wrote final weights";
  EXPECT_EQ(Membership(Job()).value("generation", int64_t{0}), generation + 1)
      << "the scale-down made more than one generation:\n"
      << history_->Describe();
  EXPECT_TRUE(history_->Problems().empty()) << history_->Problems().front() << "\n" << history_->Describe();
}

TEST_F(OperatorFailoverE2eTest, LeaderKilledDuringAScaleUpAndTheStandbyFinishesIt) {
  workload_.workers = 2;
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const int64_t generation = Membership(running).value("generation", int64_t{0});
  const auto before = WorkerPods();
  ASSERT_EQ(before.size(), 2u);

  ScaleAndKillTheLeader(3);
  ASSERT_FALSE(HasFatalFailure());
  const json scaled = WaitForGeneration(generation + 1);
  // ScaledUp, or WorkerJoined when the dead leader had recorded the new desired count in the status
  // before it died: the standby then sees the new pod as a plain joiner. Either names the one change.
  const std::string reason = Membership(scaled).value("reason", "");
  EXPECT_TRUE(reason == "ScaledUp" || reason == "WorkerJoined") << Membership(scaled).dump();
  EXPECT_EQ(Membership(scaled).value("worldSize", 0), 3) << Membership(scaled).dump();
  // Exactly one new pod, and the old ones untouched.
  const auto after = WorkerPods();
  EXPECT_EQ(after.size(), 3u);
  for (const auto& [name, uid] : before)
    EXPECT_EQ(after.count(name) ? after.at(name) : "", uid) << name << " was replaced";
  std::string added;
  for (const auto& [name, uid] : after)
    if (!before.count(name)) added = name;
  ASSERT_FALSE(added.empty());
  EXPECT_EQ(ProcessesOf(added).size(), 1u) << "the new worker's pod was created more than once";

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_EQ(finishers.size(), 3u);
  EXPECT_TRUE(finishers.count(added)) << "the worker added by the scale-up wrote no final weights";
  EXPECT_EQ(Membership(Job()).value("generation", int64_t{0}), generation + 1)
      << "the scale-up made more than one generation:\n"
      << history_->Describe();
  EXPECT_TRUE(history_->Problems().empty()) << history_->Problems().front() << "\n" << history_->Describe();
}

}  // namespace
}  // namespace ringmaster::testing
