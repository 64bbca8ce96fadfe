#include "operator/controller/membership.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::controller {
namespace {

using Clock = std::chrono::system_clock;
using std::chrono::seconds;

const Clock::time_point kT0 = Clock::from_time_t(1'800'000'000);

WorkerObservation Ready(int index, Clock::time_point since = kT0) {
  WorkerObservation w;
  w.pod = "job-worker-" + std::to_string(index);
  w.uid = "uid-" + std::to_string(index);
  w.index = index;
  w.address = "127.64.0." + std::to_string(index + 1);
  w.node = "node-" + std::to_string(index % 2);
  w.ready = true;
  w.ready_since = since;
  return w;
}

WorkerObservation Starting(int index) {
  WorkerObservation w = Ready(index);
  w.ready = false;
  return w;
}

std::vector<std::string> Pods(const api::Membership& m) {
  std::vector<std::string> out;
  for (const auto& x : m.members) out.push_back(x.pod);
  return out;
}

MembershipPolicy Policy(int min = 2, int window_s = 10) {
  MembershipPolicy p;
  p.min_workers = min;
  p.join_batch_window = seconds(window_s);
  return p;
}

TEST(DecideMembershipTest, GangWaitsForMinimumWithAClearSentence) {
  MembershipDecision d = DecideMembership({}, {Ready(0), Starting(1)}, Policy(2), kT0);
  EXPECT_FALSE(d.next.has_value());
  EXPECT_EQ(d.waiting_for, "waiting for 2 Ready workers to start (gang minimum); 1 Ready");
}

TEST(DecideMembershipTest, GangStartsAtOnceWhenEveryWorkerIsReady) {
  MembershipDecision d = DecideMembership({}, {Ready(1), Ready(0)}, Policy(2), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->generation, 1);
  EXPECT_EQ(d.next->reason, "JobStarted");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1"}));
  EXPECT_EQ(d.next->members[0].rank, 0);
  EXPECT_EQ(d.next->members[1].rank, 1);
  EXPECT_EQ(d.next->coordinator, "127.64.0.1:" + std::to_string(api::kCoordinatorPort));
}

TEST(DecideMembershipTest, GangWithStragglersStartsWhenTheWindowEnds) {
  std::vector<WorkerObservation> w = {Ready(0, kT0), Ready(1, kT0 + seconds(2)), Starting(2)};
  MembershipDecision early = DecideMembership({}, w, Policy(2, 10), kT0 + seconds(5));
  EXPECT_FALSE(early.next.has_value());
  ASSERT_TRUE(early.recheck_at.has_value());
  EXPECT_EQ(*early.recheck_at, kT0 + seconds(12));  // window counted from when the minimum was reached
  MembershipDecision late = DecideMembership({}, w, Policy(2, 10), kT0 + seconds(12));
  ASSERT_TRUE(late.next.has_value());
  EXPECT_EQ(late.next->world_size(), 2);
}

// A member that reported the generation hung (api/hang_report.h): the same members in the next generation, at once,
// reason Hung, a failure (a Warning Event) though nobody is lost.
TEST(DecideMembershipTest, AHungMemberRebuildsTheSameMembersInANewGeneration) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(), kT0).next;
  WorkerObservation hung = Ready(1);
  hung.hung_seconds = 42.4;
  MembershipDecision d = DecideMembership(current, {Ready(0), hung}, Policy(), kT0 + seconds(100));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->generation, current.generation + 1);
  EXPECT_EQ(d.next->reason, "Hung");
  EXPECT_EQ(d.reason, ChangeReason::kHung);
  EXPECT_EQ(Pods(*d.next), Pods(current));
  EXPECT_EQ(d.next->coordinator, current.coordinator);
  EXPECT_EQ(d.next->message, "generation 2, world size 2 (Hung: job-worker-1 (no step for 42 s))");
  EXPECT_TRUE(IsFailure(ChangeReason::kHung));
  EXPECT_FALSE(IsLoss(ChangeReason::kHung)) << "every member stays";
}

// A removal names the change when a member also reported a hang: the loss explains it.
TEST(DecideMembershipTest, ARemovalNamesAChangeThatAlsoHasAHang) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Policy(), kT0).next;
  WorkerObservation hung = Ready(0), failed = Ready(2);
  hung.hung_seconds = 30;
  failed.failed = true;
  failed.ready = false;
  MembershipDecision d = DecideMembership(current, {hung, Ready(1), failed}, Policy(), kT0 + seconds(100));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "WorkerFailed");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1"}));
}

// Joiners waiting for their batch window join the Hung generation: the world rebuilds anyway.
TEST(DecideMembershipTest, JoinersWaitingForTheirWindowJoinAHungGeneration) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(), kT0).next;
  WorkerObservation hung = Ready(0);
  hung.hung_seconds = 30;
  MembershipDecision d = DecideMembership(current, {hung, Ready(1), Ready(2, kT0 + seconds(99)), Starting(3)},
                                          Policy(2, 10), kT0 + seconds(100));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "Hung");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1", "job-worker-2"}));
}

TEST(DecideMembershipTest, NothingChangesWhenEveryMemberIsStillReady) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(), kT0).next;
  MembershipDecision d = DecideMembership(current, {Ready(0), Ready(1)}, Policy(), kT0 + seconds(100));
  EXPECT_FALSE(d.next.has_value());
  EXPECT_FALSE(d.recheck_at.has_value());
}

TEST(DecideMembershipTest, FailedWorkerLeavesAtOnceAndSurvivorsKeepOrder) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2), Ready(3)}, Policy(), kT0).next;
  WorkerObservation failed = Ready(1);
  failed.ready = false;
  failed.failed = true;
  MembershipDecision d = DecideMembership(current, {Ready(0), failed, Ready(2), Ready(3)}, Policy(), kT0 + seconds(1));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->generation, 2);
  EXPECT_EQ(d.next->reason, "WorkerFailed");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-2", "job-worker-3"}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(d.next->members[i].rank, i);
  EXPECT_NE(d.next->message.find("WorkerFailed: job-worker-1"), std::string::npos) << d.next->message;
}

TEST(DecideMembershipTest, LosingRankZeroPromotesTheNextSurvivorAndMovesTheCoordinator) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Policy(), kT0).next;
  // Rank 0's pod is gone entirely.
  MembershipDecision d = DecideMembership(current, {Ready(1), Ready(2)}, Policy(), kT0 + seconds(1));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "WorkerRemoved");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-1", "job-worker-2"}));
  EXPECT_EQ(d.next->coordinator, "127.64.0.2:" + std::to_string(api::kCoordinatorPort));
}

TEST(DecideMembershipTest, NodeLostOutranksOtherReasons) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Policy(), kT0).next;
  WorkerObservation lost = Ready(0);
  lost.node_lost = true;
  WorkerObservation failed = Ready(1);
  failed.ready = false;
  failed.failed = true;
  MembershipDecision d = DecideMembership(current, {lost, failed, Ready(2)}, Policy(), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "NodeLost");
  EXPECT_EQ(d.next->world_size(), 1);
}

TEST(DecideMembershipTest, ReplacementPodWithSameNameIsANewWorker) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(), kT0).next;
  WorkerObservation recreated = Ready(0, kT0 + seconds(30));
  recreated.uid = "uid-0-second";
  MembershipDecision d = DecideMembership(current, {recreated, Ready(1)}, Policy(), kT0 + seconds(31));
  ASSERT_TRUE(d.next.has_value());
  // The old job-worker-0 left; the new one joins in the same generation, after the survivor.
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-1", "job-worker-0"}));
  EXPECT_EQ(d.next->members[1].uid, "uid-0-second");
  EXPECT_EQ(d.next->reason, "WorkerRemoved");
}

TEST(DecideMembershipTest, JoinersAreBatchedThenAppendedAfterSurvivors) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(), kT0).next;
  std::vector<WorkerObservation> w = {Ready(0), Ready(1), Ready(3, kT0 + seconds(100)), Ready(2, kT0 + seconds(103)),
                                      Starting(4)};
  MembershipDecision wait = DecideMembership(current, w, Policy(2, 10), kT0 + seconds(104));
  EXPECT_FALSE(wait.next.has_value());
  ASSERT_TRUE(wait.recheck_at.has_value());
  EXPECT_EQ(*wait.recheck_at, kT0 + seconds(110));
  MembershipDecision d = DecideMembership(current, w, Policy(2, 10), kT0 + seconds(110));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "WorkerJoined");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3"}));
  EXPECT_EQ(d.next->generation, 2);
}

TEST(DecideMembershipTest, ScaleDownRemovesWorkersBeyondDesired) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Policy(), kT0).next;
  WorkerObservation extra = Ready(2);
  extra.beyond_desired = true;
  MembershipDecision d = DecideMembership(current, {Ready(0), Ready(1), extra}, Policy(), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "ScaledDown");
  EXPECT_EQ(d.next->world_size(), 2);
}

TEST(DecideMembershipTest, RemovalBelowMinimumIsStillPublished) {
  // Survivors must learn that their peer is gone (or they hang in a collective), even below min.
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(2), kT0).next;
  MembershipDecision d = DecideMembership(current, {Ready(0)}, Policy(2), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->world_size(), 1);
}

MembershipPolicy Groups(int min, int multiple_of, int window_s = 10) {
  MembershipPolicy p = Policy(min, window_s);
  p.multiple_of = multiple_of;
  return p;
}

WorkerObservation Failed(int index) {
  WorkerObservation w = Ready(index);
  w.ready = false;
  w.failed = true;
  return w;
}

TEST(DecideMembershipTest, GangStartsWithWholeGroupsAndTheRestWaitAsSpares) {
  MembershipDecision d = DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Groups(2, 2), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "JobStarted");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1"}));
  EXPECT_TRUE(d.dropped.empty());
  EXPECT_EQ(d.spares, 1);
  EXPECT_EQ(d.spares_waiting,
            "1 Ready worker waiting for 1 more worker to complete a group of 2 (spec.replicas.multipleOf)");
}

TEST(DecideMembershipTest, SparesJoinOnlyWhenTheyCompleteAGroup) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Groups(2, 2), kT0).next;
  // One more Ready worker: a spare, no new generation, even after the batch window.
  std::vector<WorkerObservation> w = {Ready(0), Ready(1), Ready(2, kT0 + seconds(5))};
  MembershipDecision one = DecideMembership(current, w, Groups(2, 2), kT0 + seconds(100));
  EXPECT_FALSE(one.next.has_value());
  EXPECT_EQ(one.spares, 1);
  EXPECT_NE(one.spares_waiting.find("waiting for 1 more worker to complete a group of 2"), std::string::npos)
      << one.spares_waiting;
  // A second one completes the group: both join at once, after the survivors, in index order.
  w.push_back(Ready(3, kT0 + seconds(100)));
  MembershipDecision two = DecideMembership(current, w, Groups(2, 2), kT0 + seconds(100));
  ASSERT_TRUE(two.next.has_value());
  EXPECT_EQ(two.next->reason, "WorkerJoined");
  EXPECT_EQ(Pods(*two.next),
            (std::vector<std::string>{"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3"}));
  EXPECT_EQ(two.spares, 0);
  EXPECT_TRUE(two.spares_waiting.empty());
}

TEST(DecideMembershipTest, LossShrinksToTheLowerMultipleDroppingTheHighestRank) {
  api::Membership current =
      *DecideMembership({}, {Ready(0), Ready(1), Ready(2), Ready(3), Ready(4), Ready(5)}, Groups(2, 2), kT0).next;
  MembershipDecision d = DecideMembership(current, {Ready(0), Failed(1), Ready(2), Ready(3), Ready(4), Ready(5)},
                                          Groups(2, 2), kT0 + seconds(1));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "WorkerFailed");
  // Survivors keep their relative order; the highest-ranked one leaves so the world is 4, not 5.
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-2", "job-worker-3", "job-worker-4"}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d.next->members[i].rank, i);
  EXPECT_EQ(d.dropped, (std::vector<std::string>{"job-worker-5"}));
  EXPECT_NE(d.next->message.find("left to keep whole groups of 2: job-worker-5"), std::string::npos) << d.next->message;
}

TEST(DecideMembershipTest, ASpareFillsTheGapOfALossAtOnce) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2), Ready(3)}, Groups(2, 2), kT0).next;
  // Worker 4 waits as a spare; worker 2 fails: the spare takes the free place in the same generation,
  // without a batch window, and nobody is dropped.
  MembershipDecision d =
      DecideMembership(current, {Ready(0), Ready(1), Failed(2), Ready(3), Ready(4, kT0 + seconds(50)), Starting(5)},
                       Groups(2, 2), kT0 + seconds(51));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "WorkerFailed");
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1", "job-worker-3", "job-worker-4"}));
  EXPECT_TRUE(d.dropped.empty());
  EXPECT_EQ(d.spares, 0);
}

TEST(DecideMembershipTest, LossBelowMinimumShrinksToTheLowerMultipleAndWaits) {
  // min 4 in groups of 2: losing one of four leaves 3, so the world is 2 (below min: the job waits for
  // replacements, as any job below its minimum does), not 3.
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2), Ready(3)}, Groups(4, 2), kT0).next;
  MembershipDecision d =
      DecideMembership(current, {Ready(0), Ready(1), Failed(2), Ready(3)}, Groups(4, 2), kT0 + seconds(1));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(Pods(*d.next), (std::vector<std::string>{"job-worker-0", "job-worker-1"}));
  EXPECT_EQ(d.dropped, (std::vector<std::string>{"job-worker-3"}));
}

TEST(DecideMembershipTest, LessThanOneGroupLeftEmptiesTheWorld) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1)}, Groups(2, 2), kT0).next;
  MembershipDecision d = DecideMembership(current, {Failed(0), Ready(1)}, Groups(2, 2), kT0 + seconds(1));
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->world_size(), 0);
  EXPECT_EQ(d.next->generation, 2);
  EXPECT_EQ(d.dropped, (std::vector<std::string>{"job-worker-1"}));
  EXPECT_NE(d.waiting_for.find("fewer Ready workers than one group of 2"), std::string::npos) << d.waiting_for;
}

TEST(DecideMembershipTest, GroupOfOneChangesNothing) {
  api::Membership current = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Groups(1, 1), kT0).next;
  MembershipDecision d = DecideMembership(current, {Ready(0), Failed(1), Ready(2)}, Groups(1, 1), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->world_size(), 2);
  EXPECT_TRUE(d.dropped.empty());
  EXPECT_EQ(d.spares, 0);
}

MembershipPolicy Processes(int per_pod, int multiple_of = 1, int min = 2) {
  MembershipPolicy p = Policy(min);
  p.processes_per_pod = per_pod;
  p.multiple_of = multiple_of;
  return p;
}

std::vector<std::string> Ids(const api::Membership& m) {
  std::vector<std::string> out;
  for (const auto& x : m.members) out.push_back(x.id());
  return out;
}

// spec.processesPerPod: 2: each pod is two consecutive ranks (processes 0 and 1, ids "pod" and "pod:1"); the
// gang minimum counts pods; a failed pod's ranks leave together, in one generation, and the survivors keep
// their order; the coordinator is rank 0's process-0 store port.
TEST(DecideMembershipTest, APodJoinsAndLeavesWithAllItsProcesses) {
  MembershipDecision waiting = DecideMembership({}, {Ready(0), Starting(1)}, Processes(2), kT0);
  EXPECT_FALSE(waiting.next.has_value()) << "min 2 counts pods, not ranks";
  api::Membership started = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Processes(2), kT0).next;
  EXPECT_EQ(Ids(started), (std::vector<std::string>{"job-worker-0", "job-worker-0:1", "job-worker-1", "job-worker-1:1",
                                                    "job-worker-2", "job-worker-2:1"}));
  EXPECT_EQ(started.world_size(), 6);
  EXPECT_EQ(started.pod_count(), 3);
  EXPECT_EQ(started.members[3].process, 1);
  EXPECT_EQ(started.members[3].address, started.members[2].address);
  EXPECT_EQ(started.coordinator, "127.64.0.1:" + std::to_string(api::kCoordinatorPort));
  EXPECT_NE(started.message.find("world size 6 in 3 pods"), std::string::npos) << started.message;

  MembershipDecision d = DecideMembership(started, {Failed(0), Ready(1), Ready(2)}, Processes(2), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->reason, "WorkerFailed");
  EXPECT_EQ(Ids(*d.next),
            (std::vector<std::string>{"job-worker-1", "job-worker-1:1", "job-worker-2", "job-worker-2:1"}));
  EXPECT_EQ(d.next->members[1].rank, 1);
  EXPECT_NE(d.next->message.find("(WorkerFailed: job-worker-0)"), std::string::npos)
      << "the pod is named once: " << d.next->message;
  EXPECT_EQ(d.next->coordinator, "127.64.0.2:" + std::to_string(api::kCoordinatorPort));
}

// multipleOf counts ranks: with 2 processes per pod, a group of 4 ranks is 2 pods and a group of 2 ranks is
// one pod (no spares); a loss that leaves half a group drops the highest pod with all its ranks.
TEST(DecideMembershipTest, MultipleOfCountsRanksWhenPodsHoldSeveral) {
  api::Membership one_pod_groups = *DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Processes(2, 2), kT0).next;
  EXPECT_EQ(one_pod_groups.world_size(), 6);
  MembershipDecision spare = DecideMembership({}, {Ready(0), Ready(1), Ready(2)}, Processes(2, 4), kT0);
  ASSERT_TRUE(spare.next.has_value());
  EXPECT_EQ(spare.next->world_size(), 4);
  EXPECT_EQ(spare.spares, 1);
  api::Membership four = *DecideMembership({}, {Ready(0), Ready(1), Ready(2), Ready(3)}, Processes(2, 4), kT0).next;
  MembershipDecision d = DecideMembership(four, {Ready(0), Failed(1), Ready(2), Ready(3)}, Processes(2, 4), kT0);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(Ids(*d.next),
            (std::vector<std::string>{"job-worker-0", "job-worker-0:1", "job-worker-2", "job-worker-2:1"}));
  EXPECT_EQ(d.dropped, (std::vector<std::string>{"job-worker-3"}));
}

TEST(MembershipJsonTest, RoundTripsAndRejectsBadFields) {
  api::Membership m = *DecideMembership({}, {Ready(0), Ready(1)}, Policy(), kT0).next;
  nlohmann::json j = api::MembershipToJson(m);
  EXPECT_EQ(j["worldSize"], 2);
  EXPECT_EQ(j["members"][1]["rank"], 1);
  EXPECT_EQ(j["members"][1]["process"], 0);
  auto back = api::MembershipFromJson(j);
  ASSERT_OK(back) << back.status();
  EXPECT_EQ(back->members, m.members);
  EXPECT_EQ(back->generation, m.generation);
  EXPECT_EQ(api::MembershipFromJson(nlohmann::json{{"generation", "two"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(api::MembershipFromJson(nlohmann::json{{"members", {{{"pod", "x"}}}}}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::controller
