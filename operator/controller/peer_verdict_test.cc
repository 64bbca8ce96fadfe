#include "operator/controller/peer_verdict.h"

#include <gtest/gtest.h>

#include <set>

namespace ringmaster::controller {
namespace {

api::Membership World(int n, int64_t generation = 5) {
  api::Membership m;
  m.generation = generation;
  for (int i = 0; i < n; ++i) m.members.push_back({"w-" + std::to_string(i), "u" + std::to_string(i), i, "", ""});
  return m;
}

api::PeerReport Report(int from, std::vector<int> cannot_reach, int64_t generation = 5) {
  api::PeerReport r{"w-" + std::to_string(from), generation, {}, ""};
  for (int p : cannot_reach) r.unreachable.push_back("w-" + std::to_string(p));
  return r;
}

std::vector<std::string> Pods(const std::vector<CutOffMember>& cut) {
  std::vector<std::string> out;
  for (const auto& c : cut) out.push_back(c.pod);
  return out;
}

using Pods_ = std::vector<std::string>;

// The pods of ranks 0..n-1 but those in `not_ready`, as the operator observes them Ready.
std::set<std::string> ReadyBut(int n, std::set<int> not_ready = {}) {
  std::set<std::string> out;
  for (int i = 0; i < n; ++i)
    if (!not_ready.count(i)) out.insert("w-" + std::to_string(i));
  return out;
}

TEST(PeerVerdictTest, AWorkerCutOffFromTheRestGoesEvenThoughItReportsEveryoneElse) {
  auto cut =
      CutOffMembers(World(4), {Report(0, {2}), Report(1, {2}), Report(3, {2}), Report(2, {0, 1, 3})}, ReadyBut(4));
  EXPECT_EQ(Pods(cut), Pods_({"w-2"}));
  EXPECT_EQ(cut[0].reporters, Pods_({"w-0", "w-1", "w-3"}));
}

TEST(PeerVerdictTest, RankZeroCutOffGoesToo) {
  EXPECT_EQ(Pods(CutOffMembers(World(3), {Report(1, {0}), Report(2, {0}), Report(0, {1, 2})}, ReadyBut(3))),
            Pods_({"w-0"}));
}

TEST(PeerVerdictTest, OneReportAgainstAHealthyMemberIsNotAMajority) {
  EXPECT_TRUE(CutOffMembers(World(4), {Report(0, {1})}, ReadyBut(4)).empty());
  EXPECT_TRUE(CutOffMembers(World(3), {Report(0, {1})}, ReadyBut(3)).empty());  // 1 of 2 is not more than half
}

TEST(PeerVerdictTest, AWorldOfTwoReportingEachOtherBothReadyKeepsTheLowerRank) {
  EXPECT_EQ(Pods(CutOffMembers(World(2), {Report(0, {1}), Report(1, {0})}, ReadyBut(2))), Pods_({"w-1"}));
  // Only the survivor could report (the other lost the apiserver with its peers): it stays.
  EXPECT_EQ(Pods(CutOffMembers(World(2), {Report(1, {0})}, ReadyBut(2))), Pods_({"w-0"}));
}

TEST(PeerVerdictTest, AnEvenSplitKeepsTheSideOfTheLowestRank) {
  auto cut = CutOffMembers(World(4), {Report(0, {2, 3}), Report(1, {2, 3}), Report(2, {0, 1}), Report(3, {0, 1})},
                           ReadyBut(4));
  EXPECT_EQ(Pods(cut), Pods_({"w-2", "w-3"}));
}

TEST(PeerVerdictTest, ReportsOfAnotherGenerationOrFromOutsideTheWorldDoNotCount) {
  EXPECT_TRUE(CutOffMembers(World(3), {Report(1, {0}, 4), Report(2, {0}, 4)}, ReadyBut(3)).empty());
  api::PeerReport stranger{"someone-else", 5, {"w-0"}, ""};
  EXPECT_TRUE(CutOffMembers(World(2), {stranger}, ReadyBut(2)).empty());
  EXPECT_TRUE(CutOffMembers(World(2), {Report(0, {0})}, ReadyBut(2)).empty());  // itself
  EXPECT_TRUE(CutOffMembers(World(1), {Report(0, {7})}, ReadyBut(1)).empty());  // not a member
}

// The soak's case: rank 0 cut from its peer (its probe fails) but not from the apiserver, both report
// each other. The healthy rank 1 stays and rank 0 goes, in one verdict.
TEST(PeerVerdictTest, AWorldOfTwoReportingEachOtherKeepsTheReadyOneOverTheLowerRank) {
  auto cut = CutOffMembers(World(2), {Report(0, {1}), Report(1, {0})}, ReadyBut(2, {0}));
  EXPECT_EQ(Pods(cut), Pods_({"w-0"}));
  EXPECT_EQ(cut[0].reporters, Pods_({"w-1"}));
  EXPECT_EQ(Pods(CutOffMembers(World(2), {Report(0, {1}), Report(1, {0})}, ReadyBut(2, {1}))), Pods_({"w-1"}));
}

TEST(PeerVerdictTest, AWorldOfTwoReportingEachOtherOfEqualReadinessKeepsTheLowerRank) {
  const std::vector<api::PeerReport> both = {Report(0, {1}), Report(1, {0})};
  EXPECT_EQ(Pods(CutOffMembers(World(2), both, ReadyBut(2))), Pods_({"w-1"}));
  EXPECT_EQ(Pods(CutOffMembers(World(2), both, ReadyBut(2, {0, 1}))), Pods_({"w-1"}));
  EXPECT_EQ(Pods(CutOffMembers(World(2), both, {})), Pods_({"w-1"}));  // none observed at all
}

TEST(PeerVerdictTest, ANotReadyRankZeroCutOffFromTheRestGoes) {
  auto cut = CutOffMembers(World(3), {Report(1, {0}), Report(2, {0}), Report(0, {1, 2})}, ReadyBut(3, {0}));
  EXPECT_EQ(Pods(cut), Pods_({"w-0"}));
  EXPECT_EQ(cut[0].reporters, Pods_({"w-1", "w-2"}));
}

// Readiness only breaks ties between suspects: it is no verdict of its own, and it does not let a
// worker with a broken link that reports everyone, or one false report, remove a healthy member.
TEST(PeerVerdictTest, NotReadyAloneRemovesNoOne) {
  EXPECT_TRUE(CutOffMembers(World(3), {}, ReadyBut(3, {0, 1})).empty());
  // Ready w-2 with a broken link reports everyone; the others, NotReady, report no one.
  EXPECT_TRUE(CutOffMembers(World(4), {Report(2, {0, 1, 3})}, ReadyBut(4, {0, 1, 3})).empty());
  EXPECT_TRUE(CutOffMembers(World(3), {Report(1, {0})}, ReadyBut(3, {0})).empty());  // 1 of 2 is not more than half
}

TEST(PeerVerdictTest, AnEvenSplitKeepsTheSideWhoseBestMemberIsReady) {
  const std::vector<api::PeerReport> split = {Report(0, {2, 3}), Report(1, {2, 3}), Report(2, {0, 1}),
                                              Report(3, {0, 1})};
  // The lowest rank's side is NotReady throughout: the Ready side stays.
  EXPECT_EQ(Pods(CutOffMembers(World(4), split, ReadyBut(4, {0, 1}))), Pods_({"w-0", "w-1"}));
  // Each side has a Ready member: the side of the lowest Ready rank (w-1) stays.
  EXPECT_EQ(Pods(CutOffMembers(World(4), split, ReadyBut(4, {0, 2}))), Pods_({"w-2", "w-3"}));
  // Only w-2 is Ready: its side stays, though w-3 beside it is NotReady.
  EXPECT_EQ(Pods(CutOffMembers(World(4), split, {"w-2"})), Pods_({"w-0", "w-1"}));
}

// In a world of two one report is a majority. When only the NotReady (cut) rank 0 has reported so far, its word
// does not drop its Ready peer: nobody is cut until the peer's report comes, and then rank 0 goes.
TEST(PeerVerdictTest, ANotReadyMembersReportAloneDoesNotDropAReadyPeer) {
  api::Membership m;
  m.generation = 3;
  m.members = {{"w-0", "u0", 0, "10.0.0.1", "n0"}, {"w-1", "u1", 1, "10.0.0.2", "n1"}};
  const std::set<std::string> ready = {"w-1"};
  EXPECT_TRUE(CutOffMembers(m, {{"w-0", 3, {"w-1"}, ""}}, ready).empty());
  auto both = CutOffMembers(m, {{"w-0", 3, {"w-1"}, ""}, {"w-1", 3, {"w-0"}, ""}}, ready);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].pod, "w-0");
  EXPECT_EQ(both[0].reporters, (std::vector<std::string>{"w-1"}));
  // Both NotReady: the reports count as before (one is a majority of one).
  auto unready = CutOffMembers(m, {{"w-0", 3, {"w-1"}, ""}}, {});
  ASSERT_EQ(unready.size(), 1u);
  EXPECT_EQ(unready[0].pod, "w-1");
}

}  // namespace
}  // namespace ringmaster::controller
