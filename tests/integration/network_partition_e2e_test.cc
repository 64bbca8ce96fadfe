// Real network partitions under a real elastic job: every worker pod runs in a network namespace of its
// own on a bridge the test owns (PodRunnerOptions::pod_network, pod_runner/pod_network.h), so cutting a
// pod's link makes its packets vanish -- no reset, no error -- instead of the clean "connection refused"
// of a killed process. The survivors' collectives stall until the configured timeout (--timeout-ms), then
// each probes its peers and reports the one it cannot reach (api/peer_report.h); the operator decides by
// majority (controller/peer_verdict.h) and publishes a generation without it; its pod is replaced. While
// the cut lasts the pod runner, like the kubelet of a partitioned node, does not act on the pod's deletion;
// when the link comes back the stale worker is killed, or finds itself outside the membership and leaves,
// and either way it never rejoins under its old identity nor disturbs the survivors: the job ends with
// the one-process weights and every sample once per epoch.
//
// Printed for the record: partition -> new generation, against the configured collective timeout.
#include <chrono>
#include <cstdio>
#include <string>

#include "tests/integration/elastic_workers_fixture.h"
#include "tests/integration/membership_history.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class NetworkPartitionE2eTest : public ElasticWorkersE2eTest {
 protected:
  void SetUp() override {
    pod_network_ = true;
    // The kubelet's readiness probes, from the network's side of each pod's link (the pod runner's).
    template_metadata_ = "    metadata: {annotations: {" + std::string(kProbedReadinessAnnotation) + ": " +
                         kProbedReadinessValue + "}}\n";
    ElasticWorkersE2eTest::SetUp();
    if (HasFatalFailure()) return;
    auto history = MembershipHistory::Watch(cluster_.kubeconfig(), ns_, kJob);
    ASSERT_OK(history) << history.status();
    history_ = std::move(history).value();
  }
  void TearDown() override {
    history_.reset();
    ElasticWorkersE2eTest::TearDown();
  }

  // Cuts member `rank` off (its link, and with control_plane_too its apiserver) and checks that exactly
  // one generation drops it for PeerUnreachable, that its replacement joins, that the stale worker is
  // gone after the heal and never came back, and that the job finishes exactly.
  void PartitionAndHeal(int rank, bool control_plane_too) {
    ApplyJob();
    json running = WaitUntilTraining();
    ASSERT_FALSE(HasFailure());
    const json m = Membership(running);
    const std::string victim = m["members"][rank].value("pod", "");
    const std::string victim_uid = m["members"][rank].value("uid", "");
    const int64_t generation = m.value("generation", int64_t{0});

    const auto cut_at = Clock::now();
    ASSERT_OK(runner_->Partition(victim, control_plane_too)) << victim;
    WaitForJob("a generation without " + victim, seconds(90), [&](const json& j) {
      if (Membership(j).value("generation", int64_t{0}) <= generation) return false;
      for (const auto& member : Membership(j).value("members", json::array()))
        if (member.value("uid", "") == victim_uid) return false;
      return true;
    });
    const double took = std::chrono::duration<double>(Clock::now() - cut_at).count();
    std::printf("[ figures  ] partition of rank %d%s -> generation without it: %.2f s (collective timeout %.1f s)\n",
                rank, control_plane_too ? " (and its apiserver)" : "", took, kCollectiveTimeoutMs / 1000.0);
    // The generation that dropped it may be superseded by its replacement's join before a poll sees
    // it: the operator's Event for it says which generation it was and why.
    const std::string event = WaitForMembershipEvent("PeerUnreachable", 2);
    EXPECT_NE(event.find("generation " + std::to_string(generation + 1) + ","), std::string::npos)
        << event << "\n"
        << history_->Describe();
    EXPECT_NE(event.find(victim), std::string::npos) << event;

    // Cut off from the apiserver too, the stale worker still runs, unaware, and its pod's kubelet (the
    // runner) has not heard of the deletion. (A worker that still sees the apiserver learns that it left
    // the membership and exits 0 by itself.)
    if (control_plane_too) {
      bool stale_running = false;
      for (const auto& p : ProcessesOf(victim)) stale_running |= p.uid == victim_uid && p.running;
      EXPECT_TRUE(stale_running) << runner_->Describe();
    }

    // Its replacement (a new pod, at a fresh index, as for a lost node) joins.
    json rejoined = WaitForJob("the replacement of " + victim + " to join", seconds(90),
                               [&](const json& j) { return Membership(j).value("worldSize", 0) == 3; });
    EXPECT_EQ(Membership(rejoined).value("generation", int64_t{0}), generation + 2) << history_->Describe();

    // The heal: the stale worker is killed (its pod is gone) or leaves by itself; it is never a member again.
    ASSERT_OK(runner_->Heal(victim));
    Status gone = WaitFor("the stale " + victim + " to end after the heal", seconds(30), [&](std::string* last) {
      for (const auto& p : ProcessesOf(victim)) {
        if (p.uid == victim_uid && p.running) {
          *last = "pid " + std::to_string(p.pid) + " still runs";
          return false;
        }
      }
      return true;
    });
    EXPECT_OK(gone) << runner_->Describe();
    // ... and its pod, held Terminating while no kubelet could confirm the deletion, goes.
    Status deleted =
        WaitFor("the cut pod " + victim + " to be deleted after the heal", seconds(30), [&](std::string* last) {
          auto uid = cluster_.Kubectl(
              {"get", "pod", victim, "-n", ns_, "--ignore-not-found", "-o", "jsonpath={.metadata.uid}"});
          *last = uid.ok() ? "uid '" + uid->out + "'" : uid.status().ToString();
          return uid.ok() && uid->ok() && uid->out != victim_uid;
        });
    EXPECT_OK(deleted);

    ExpectSucceededWithExactResults();
    EXPECT_TRUE(history_->Problems().empty()) << history_->Problems().front() << "\n" << history_->Describe();
    for (const auto& member : Membership(Job()).value("members", json::array()))
      EXPECT_NE(member.value("uid", ""), victim_uid) << "the stale worker is a member again";
  }

  std::unique_ptr<MembershipHistory> history_;
};

TEST_F(NetworkPartitionE2eTest, AWorkerCutOffFromEverythingIsDroppedReplacedAndNeverCorruptsTheSurvivors) {
  PartitionAndHeal(/*rank=*/1, /*control_plane_too=*/true);
}

// Rank 0 serves the rendezvous store: the survivors cannot even rebuild without it. It still reaches the
// apiserver and reports both of them; the majority rule keeps the two who can reach each other.
TEST_F(NetworkPartitionE2eTest, RankZeroCutOffFromItsPeersOnlyIsOutvotedAndDropped) {
  PartitionAndHeal(/*rank=*/0, /*control_plane_too=*/false);
}

}  // namespace
}  // namespace ringmaster::testing
