// A real node lost under a real elastic job (elastic_workers_fixture.h, on the cluster's real nodes): the node
// holding one of the three workers hangs (support/frozen_node.h: its kubelet stopped, its pods' processes
// frozen, its network up, so the peers see silence rather than resets). Nothing tells anyone at once, as on a
// real cluster:
//   * the survivors' collectives stall until their timeout (--timeout-ms), they report the silent peer and the
//     operator publishes a generation without it (PeerUnreachable), or, if the node controller marks the node
//     NotReady first, the operator drops the worker for its node (NodeLost);
//   * the node controller marks the node NotReady after --node-monitor-grace-period (the default, 50 s), and
//     the operator then force-deletes the lost worker's pod, whose frozen kubelet would never confirm a
//     graceful deletion: no pod is left stranded on the dead node;
//   * the job ends with the one-process weights and every sample committed once per epoch, and the loss is
//     not counted as a worker failure (status.restartCount 0).
// Freezing a node stalls every pod on it, so ctest runs this test alone (SERIAL).
//
// Printed for the record: the node's freeze -> a generation without its worker, -> NotReady, -> its pod gone.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "tests/integration/elastic_workers_fixture.h"
#include "tests/support/frozen_node.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class LostNodeE2eTest : public ElasticWorkersE2eTest {
 protected:
  void SetUp() override {
    ElasticWorkersE2eTest::SetUp();
    if (HasFatalFailure()) return;
    // The survivors stall from the freeze until the worker is dropped (~50 s); the remaining 108 steps then take
    // some 32 s, so that the force deletion (5 s after the drop) lands mid-run.
    *(std::find(workload_.args.begin(), workload_.args.end(), "--step-delay-ms") + 1) = "300";
    // Two workers on one real node and one on the other, so that losing the lone one's node leaves two.
    placement_ +=
        "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, "
        "whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {" +
        std::string(api::kJobNameLabel) + ": " + kJob + "}}}]\n";
  }

  void TearDown() override {
    if (frozen_) {
      Status thawed = frozen_->Thaw();
      EXPECT_OK(thawed) << thawed;
      // The node back before the next test: its kubelet reports Ready again within seconds of thawing.
      Status ready = WaitFor("node " + node_ + " Ready again", seconds(90), [&](std::string* last) {
        *last = NodeReady();
        return *last == "True";
      });
      EXPECT_OK(ready) << ready;
      frozen_.reset();
    }
    ElasticWorkersE2eTest::TearDown();
  }

  // The Ready condition's status of node_ ("True", "False", "Unknown"; "" when unreadable).
  std::string NodeReady() {
    auto node = cluster_.KubectlJson({"get", "node", node_});
    if (!node.ok()) return "";
    for (const auto& c : (*node).value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Ready") return c.value("status", "");
    return "";
  }

  std::string node_;                    // the frozen node
  std::unique_ptr<FrozenNode> frozen_;  // thawed by TearDown, whatever the test's outcome
};

TEST_F(LostNodeE2eTest, AHungNodeLosesItsWorkerItsPodIsForceDeletedAndTheJobFinishesExactly) {
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const int64_t generation = m.value("generation", int64_t{0});
  std::map<std::string, std::vector<json>> by_node;
  for (const auto& member : m["members"]) by_node[member.value("node", "")].push_back(member);
  std::string victim, victim_uid;
  for (const auto& [node, members] : by_node) {
    if (members.size() != 1) continue;
    node_ = node;
    victim = members[0].value("pod", "");
    victim_uid = members[0].value("uid", "");
  }
  ASSERT_FALSE(victim.empty()) << "no real node holds exactly one of the three workers: " << m.dump();

  const auto frozen_at = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - frozen_at).count(); };
  auto frozen = FrozenNode::Freeze(cluster_, node_);
  ASSERT_OK(frozen) << frozen.status();
  frozen_ = std::move(frozen).value();
  std::printf("[ figures  ] froze %s (rank %d, %s) at generation %lld\n", node_.c_str(),
              by_node[node_][0].value("rank", -1), victim.c_str(), static_cast<long long>(generation));

  // A generation without it, for whichever cause the operator saw first.
  json dropped = WaitForJob("a generation without " + victim, seconds(120), [&](const json& j) {
    if (Membership(j).value("generation", int64_t{0}) <= generation) return false;
    for (const auto& member : Membership(j).value("members", json::array()))
      if (member.value("uid", "") == victim_uid) return false;
    return true;
  });
  ASSERT_FALSE(HasFailure());
  std::printf("[ figures  ] hung node -> a generation without its worker: %.1f s (collective timeout %.1f s)\n",
              since(), kCollectiveTimeoutMs / 1000.0);
  const std::string event = WaitForMembershipEvent(std::set<std::string>{"PeerUnreachable", "NodeLost"},
                                                   Membership(dropped).value("worldSize", 0));
  std::printf("[ figures  ] the operator's event: %s\n", event.c_str());
  EXPECT_NE(event.find(victim), std::string::npos) << event;
  EXPECT_NE(event.find("generation " + std::to_string(generation + 1) + ","), std::string::npos) << event;

  // The node controller's verdict, then the operator's force deletion of the pod its kubelet cannot confirm.
  Status not_ready = WaitFor("node " + node_ + " NotReady", seconds(120), [&](std::string* last) {
    *last = NodeReady();
    return *last == "Unknown" || *last == "False";
  });
  ASSERT_OK(not_ready) << not_ready;
  std::printf("[ figures  ] hung node -> NotReady: %.1f s\n", since());
  Status gone = WaitForPodGone(victim, victim_uid, seconds(60));
  EXPECT_OK(gone) << gone;
  std::printf("[ figures  ] hung node -> its worker's pod deleted: %.1f s\n", since());

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_FALSE(finishers.count(victim)) << "the lost worker's pod name wrote final weights";
  for (const auto& p : ProcessesOf(victim)) {
    if (p.uid == victim_uid) {
      EXPECT_FALSE(p.ended) << "the frozen worker's exit was reported: " << p.reason;
    }
  }
  EXPECT_EQ(Job()["status"].value("restartCount", -1), 0) << "a lost node is not a worker failure";
}

}  // namespace
}  // namespace ringmaster::testing
