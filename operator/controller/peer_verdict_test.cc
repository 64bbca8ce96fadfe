#include "operator/controller/peer_verdict.h"

#include <gtest/gtest.h>

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

TEST(PeerVerdictTest, AWorkerCutOffFromTheRestGoesEvenThoughItReportsEveryoneElse) {
  auto cut = CutOffMembers(World(4), {Report(0, {2}), Report(1, {2}), Report(3, {2}), Report(2, {0, 1, 3})});
  EXPECT_EQ(Pods(cut), Pods_({"w-2"}));
  EXPECT_EQ(cut[0].reporters, Pods_({"w-0", "w-1", "w-3"}));
}

TEST(PeerVerdictTest, RankZeroCutOffGoesToo) {
  EXPECT_EQ(Pods(CutOffMembers(World(3), {Report(1, {0}), Report(2, {0}), Report(0, {1, 2})})), Pods_({"w-0"}));
}

TEST(PeerVerdictTest, OneReportAgainstAHealthyMemberIsNotAMajority) {
  EXPECT_TRUE(CutOffMembers(World(4), {Report(0, {1})}).empty());
  EXPECT_TRUE(CutOffMembers(World(3), {Report(0, {1})}).empty());  // 1 of 2 is not more than half
}

TEST(PeerVerdictTest, AWorldOfTwoReportingEachOtherKeepsTheLowerRank) {
  EXPECT_EQ(Pods(CutOffMembers(World(2), {Report(0, {1}), Report(1, {0})})), Pods_({"w-1"}));
  // Only the survivor could report (the other lost the apiserver with its peers): it stays.
  EXPECT_EQ(Pods(CutOffMembers(World(2), {Report(1, {0})})), Pods_({"w-0"}));
}

TEST(PeerVerdictTest, AnEvenSplitKeepsTheSideOfTheLowestRank) {
  auto cut = CutOffMembers(World(4), {Report(0, {2, 3}), Report(1, {2, 3}), Report(2, {0, 1}), Report(3, {0, 1})});
  EXPECT_EQ(Pods(cut), Pods_({"w-2", "w-3"}));
}

TEST(PeerVerdictTest, ReportsOfAnotherGenerationOrFromOutsideTheWorldDoNotCount) {
  EXPECT_TRUE(CutOffMembers(World(3), {Report(1, {0}, 4), Report(2, {0}, 4)}).empty());
  api::PeerReport stranger{"someone-else", 5, {"w-0"}, ""};
  EXPECT_TRUE(CutOffMembers(World(2), {stranger}).empty());
  EXPECT_TRUE(CutOffMembers(World(2), {Report(0, {0})}).empty());  // itself
  EXPECT_TRUE(CutOffMembers(World(1), {Report(0, {7})}).empty());  // not a member
}

}  // namespace
}  // namespace ringmaster::controller
