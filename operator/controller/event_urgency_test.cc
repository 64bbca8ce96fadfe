// Which pod changes jump the controller's queue.
#include "operator/controller/event_urgency.h"

#include <gtest/gtest.h>

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

json Pod(const std::string& phase, const std::string& ready, json extra_conditions = json::array()) {
  json conditions = extra_conditions;
  if (!ready.empty()) conditions.push_back({{"type", "Ready"}, {"status", ready}});
  return {{"metadata", {{"name", "j-worker-0"}}}, {"status", {{"phase", phase}, {"conditions", conditions}}}};
}

TEST(EventUrgencyTest, ProgressIsRoutine) {
  const json pending = Pod("Pending", "");
  const json running = Pod("Running", "False");
  const json ready = Pod("Running", "True");
  EXPECT_FALSE(PodInTrouble(nullptr, pending)) << "created";
  EXPECT_FALSE(PodInTrouble(&pending, running)) << "started";
  EXPECT_FALSE(PodInTrouble(&running, ready)) << "became Ready";
  EXPECT_FALSE(PodInTrouble(&ready, ready)) << "nothing that matters changed";
}

TEST(EventUrgencyTest, EndingDeletionDisruptionAndLostReadinessAreNews) {
  const json ready = Pod("Running", "True");
  EXPECT_TRUE(PodInTrouble(&ready, Pod("Failed", "False")));
  EXPECT_TRUE(PodInTrouble(&ready, Pod("Succeeded", "False")));
  EXPECT_TRUE(PodInTrouble(&ready, Pod("Unknown", "")));
  EXPECT_TRUE(PodInTrouble(&ready, Pod("Running", "False"))) << "lost readiness";
  json deleting = ready;
  deleting["metadata"]["deletionTimestamp"] = "2026-11-29T01:00:00Z";
  EXPECT_TRUE(PodInTrouble(&ready, deleting));
  const json disrupted =
      Pod("Running", "True", json::array({{{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "x"}}}));
  EXPECT_TRUE(PodInTrouble(&ready, disrupted));
  EXPECT_TRUE(PodInTrouble(nullptr, Pod("Failed", ""))) << "a relisted pod that already failed";
}

std::vector<kube::ObjectPtr> Pods(const std::vector<json>& pods) {
  std::vector<kube::ObjectPtr> out;
  for (const auto& p : pods) out.push_back(std::make_shared<const json>(p));
  return out;
}

TEST(EventUrgencyTest, TheLastWorkerTurningReadyCompletesItsJob) {
  const json running = Pod("Running", "False");
  const json ready = Pod("Running", "True");
  EXPECT_TRUE(PodCompletesJob(&running, ready, Pods({ready, ready, ready})));
  EXPECT_FALSE(PodCompletesJob(&running, ready, Pods({ready, running, ready}))) << "a sibling is not Ready yet";
  EXPECT_FALSE(PodCompletesJob(&ready, ready, Pods({ready, ready}))) << "no turn: already Ready";
  EXPECT_FALSE(PodCompletesJob(nullptr, ready, Pods({ready, ready}))) << "an add (a relist) is not a turn";
  EXPECT_FALSE(PodCompletesJob(&running, running, Pods({running}))) << "not Ready";
  json deleting = running;
  deleting["metadata"]["deletionTimestamp"] = "2026-11-29T01:00:00Z";
  EXPECT_TRUE(PodCompletesJob(&running, ready, Pods({ready, deleting, Pod("Failed", "False")})))
      << "terminating and finished pods are not waited for";
}

}  // namespace
}  // namespace ringmaster::controller
