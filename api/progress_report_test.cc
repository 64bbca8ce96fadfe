#include "api/progress_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ringmaster::api {
namespace {

ProgressReport Sample() {
  ProgressReport r;
  r.generation = 4;
  r.reporter = "job-worker-0";
  r.world_size = 8;
  r.first_step = 121;
  r.first_step_at = "2026-11-24T01:02:03.456Z";
  r.resumed_from = 120;
  r.restored_from = std::string(restored_from::kPeer);
  r.replayed_steps = 0;
  r.rebuild_seconds = 1.25;
  r.restore_seconds = 0.125;
  r.step_seconds = 0.3;
  return r;
}

TEST(ProgressReportTest, RoundTripsThroughItsConfigMapValue) {
  const ProgressReport r = Sample();
  auto back = DecodeProgressReport(EncodeProgressReport(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
}

TEST(ProgressReportTest, TheValueUsesTheContractsNamesUnderAKeyNoPodCanHave) {
  const nlohmann::json j = nlohmann::json::parse(EncodeProgressReport(Sample()));
  for (const char* key : {"generation", "reporter", "worldSize", "firstStep", "firstStepAt", "resumedFrom",
                          "restoredFrom", "replayedSteps", "rebuildSeconds", "restoreSeconds", "stepSeconds"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 11u) << j.dump();
  EXPECT_EQ(j["firstStepAt"], "2026-11-24T01:02:03.456Z");
  EXPECT_EQ(kProgressReportKey, "_progress");
}

TEST(ProgressReportTest, GarbageIsAnErrorNamingTheField) {
  const struct {
    const char* key;
    nlohmann::json value;
  } bad[] = {{"generation", 0},
             {"generation", "4"},
             {"reporter", ""},
             {"worldSize", 0},
             {"firstStep", -1},
             {"firstStepAt", "yesterday"},
             {"firstStepAt", "2026-11-24T01:02:03+01:00"},
             {"resumedFrom", 1.5},
             {"restoredFrom", "memory"},
             {"replayedSteps", -2},
             {"rebuildSeconds", -0.5},
             {"restoreSeconds", "1"},
             {"stepSeconds", nullptr}};
  for (const auto& b : bad) {
    nlohmann::json j = nlohmann::json::parse(EncodeProgressReport(Sample()));
    j[b.key] = b.value;
    auto r = DecodeProgressReport(j.dump());
    ASSERT_FALSE(r.ok()) << j.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.key), std::string::npos) << r.status().ToString();
  }
  for (const char* text : {"", "{", "[]", "\xff\xfe"}) EXPECT_FALSE(DecodeProgressReport(text).ok()) << text;
  nlohmann::json missing = nlohmann::json::parse(EncodeProgressReport(Sample()));
  missing.erase("stepSeconds");
  EXPECT_FALSE(DecodeProgressReport(missing.dump()).ok());
}

}  // namespace
}  // namespace ringmaster::api
