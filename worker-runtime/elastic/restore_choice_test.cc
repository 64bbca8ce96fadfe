#include "worker-runtime/elastic/restore_choice.h"

#include <gtest/gtest.h>

namespace ringmaster::elastic {
namespace {

HeldState Agreed(int64_t step, uint32_t crc) { return HeldState{step, crc, 100 + step, -1, 0, 0, 0}; }
HeldState WithTentative(int64_t agreed, uint32_t crc, int64_t tentative, uint32_t tcrc) {
  return HeldState{agreed, crc, 100 + agreed, tentative, tcrc, 200 + tentative, 0};
}

TEST(RestoreChoiceTest, TheNewestAgreedStepWinsAndATentativeStepBeyondItIsRolledBack) {
  // Rank 1 saw step 5 agreed; rank 0 computed it too but had not heard; rank 2 ran ahead to a step 6 nobody agreed.
  auto choice = ChooseRestore({WithTentative(4, 0x44, 5, 0x55), Agreed(5, 0x55), WithTentative(5, 0x55, 6, 0x66)});
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->step, 5);
  EXPECT_EQ(choice->root, 0) << "the lowest holder, here of a tentative copy that every member confirmed";
  EXPECT_TRUE(choice->tentative);
  EXPECT_EQ(choice->size, 205);
  EXPECT_EQ(choice->crc, 0x55u);
  EXPECT_TRUE(choice->rejected.empty());
}

TEST(RestoreChoiceTest, ATentativeStepNobodyAgreedOnIsNeverChosen) {
  auto choice = ChooseRestore({WithTentative(3, 0x33, 4, 0x44), WithTentative(3, 0x33, 4, 0x44)});
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->step, 3);
  EXPECT_FALSE(choice->tentative);
}

TEST(RestoreChoiceTest, HoldersThatDisagreeAreNeverBroadcastTheOlderAgreedStepIsTaken) {
  // Step 7's holders differ (one copy is garbage): step 6, which ranks 1 and 2 still hold agreed, is restored.
  auto choice = ChooseRestore({Agreed(7, 0x70), Agreed(6, 0x60), WithTentative(6, 0x60, 7, 0xbad)});
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->step, 6);
  EXPECT_EQ(choice->root, 1);
  ASSERT_EQ(choice->rejected.size(), 1u);
  EXPECT_NE(choice->rejected[0].find("step 7"), std::string::npos) << choice->rejected[0];
  EXPECT_NE(choice->rejected[0].find("00000bad"), std::string::npos) << choice->rejected[0];
}

TEST(RestoreChoiceTest, NoAgreeingStepIsDataLossNamingTheChecksums) {
  auto choice = ChooseRestore({Agreed(7, 0x70), Agreed(7, 0x71)});
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(choice.status().message().find("00000070"), std::string::npos) << choice.status();
  EXPECT_NE(choice.status().message().find("checkpoint"), std::string::npos) << choice.status();
}

TEST(RestoreChoiceTest, StepZeroIsTheProgramsInitialBytesAndIsNotCompared) {
  HeldState a = Agreed(0, 0x1), b = Agreed(0, 0x2);
  a.origin = 2;
  auto choice = ChooseRestore({a, b});
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->step, 0);
  EXPECT_EQ(choice->root, 0);
  EXPECT_EQ(choice->origin, 2);
}

TEST(RestoreChoiceTest, ANewcomerWithInitialBytesDoesNotHoldTheNewestStep) {
  auto choice = ChooseRestore({Agreed(0, 0x1), Agreed(9, 0x99), Agreed(9, 0x99)});
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->step, 9);
  EXPECT_EQ(choice->root, 1);
}

}  // namespace
}  // namespace ringmaster::elastic
