#include "operator/controller/queue_admission.h"

#include <gtest/gtest.h>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "base/time_format.h"
#include "operator/controller/job_plan.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

const Clock::time_point kT0 = Clock::from_time_t(1'800'000'000);

json QueuedJob(int min, int desired, json extra_spec = json::object()) {
  json job = {{"apiVersion", api::kApiVersion},
              {"kind", api::kKind},
              {"metadata",
               {{"name", "j"},
                {"namespace", "ns"},
                {"uid", "0123456789"},
                {"generation", 1},
                {"labels", {{kQueueNameLabel, "team-a"}}}}},
              {"spec",
               {{"replicas", {{"min", min}, {"max", desired}, {"desired", desired}}},
                {"template",
                 {{"spec",
                   {{"containers",
                     {{{"name", "t"}, {"image", "i"}, {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}}}}}}}}}};
  job["spec"].update(extra_spec);
  return job;
}

JobSpec SpecOf(const json& job) {
  auto decoded = api::DecodeTrainingJobSpec(job["spec"]);
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  auto spec = ParseJobSpec(*decoded);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

json Condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message = "") {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", FormatRfc3339(kT0)}};
}

// A Workload as Kueue leaves it once admitted with `count` worker pods on flavour "gpu-a".
json AdmittedWorkload(const json& job, int count) {
  auto wl = BuildWorkload(job, SpecOf(job), {});
  EXPECT_TRUE(wl.ok());
  (*wl)["metadata"]["resourceVersion"] = "7";
  (*wl)["metadata"]["generation"] = 1;
  (*wl)["status"] = {
      {"conditions", {Condition("QuotaReserved", "True", "QuotaReserved"), Condition("Admitted", "True", "Admitted")}},
      {"admission",
       {{"clusterQueue", "cq"},
        {"podSetAssignments",
         json::array({{{"name", kWorkerPodSet}, {"count", count}, {"flavors", {{"nvidia.com/gpu", "gpu-a"}}}}})}}}};
  return *wl;
}

// The ResourceFlavors as the informer caches them: "gpu-a", with a node label and a toleration.
void AddFlavors(kube::Store* store) {
  store->Upsert("gpu-a",
                std::make_shared<const json>(
                    json{{"metadata", {{"name", "gpu-a"}}},
                         {"spec",
                          {{"nodeLabels", {{"pool", "a100"}}},
                           {"tolerations", {{{"key", "pool"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}}}}}));
}

// Applies a plan's status to the job, as the apiserver would.
json WithStatusOf(json job, const JobPlan& plan) {
  if (plan.status) job["status"] = *plan.status;
  return job;
}

TEST(QueueAdmissionTest, TheWorkloadAsksForTheWorldAndSparesWithMinCountAndIsOwnedByTheJob) {
  json job = QueuedJob(2, 4, {{"replicas", {{"min", 2}, {"max", 4}, {"desired", 4}, {"spares", 1}}}});
  WorkloadPriority priority{{{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "high"}}, 1000};
  auto wl = BuildWorkload(job, SpecOf(job), priority);
  ASSERT_OK(wl);
  EXPECT_EQ((*wl)["metadata"]["name"], "trainingjob-j-01234");
  EXPECT_EQ((*wl)["metadata"]["labels"][std::string(api::kJobNameLabel)], "j");
  EXPECT_EQ((*wl)["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ((*wl)["metadata"]["ownerReferences"][0]["uid"], "0123456789");
  EXPECT_EQ((*wl)["spec"]["queueName"], "team-a");
  EXPECT_EQ((*wl)["spec"]["active"], true);
  const json& ps = (*wl)["spec"]["podSets"][0];
  EXPECT_EQ(ps["name"], kWorkerPodSet);
  EXPECT_EQ(ps["count"], 5);     // desired 4 + 1 spare: spares count against quota
  EXPECT_EQ(ps["minCount"], 2);  // partial admission down to spec.replicas.min
  EXPECT_EQ(ps["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_EQ((*wl)["spec"]["priority"], 1000);
  EXPECT_EQ((*wl)["spec"]["priorityClassRef"]["name"], "high");

  json fixed = QueuedJob(3, 3);
  auto whole = BuildWorkload(fixed, SpecOf(fixed), {});
  ASSERT_OK(whole);
  EXPECT_FALSE((*whole)["spec"]["podSets"][0].contains("minCount"));  // all or nothing
  EXPECT_FALSE((*whole)["spec"].contains("priority"));
}

TEST(QueueAdmissionTest, PendingAdmittedAndEvictedReadAsKueueWroteThem) {
  kube::Store flavors;
  AddFlavors(&flavors);
  json job = QueuedJob(2, 4);

  QueueAdmission none = ObserveAdmission("team-a", nullptr, flavors);
  EXPECT_FALSE(none.admitted);
  EXPECT_FALSE(none.workload_exists);

  json pending = AdmittedWorkload(job, 4);
  pending["status"] = {{"conditions",
                        {Condition("QuotaReserved", "False", "Pending",
                                   "couldn't assign flavors to pod set workers: insufficient quota")}}};
  QueueAdmission waiting = ObserveAdmission("team-a", &pending, flavors);
  EXPECT_TRUE(waiting.workload_exists);
  EXPECT_FALSE(waiting.admitted);
  EXPECT_EQ(waiting.reason, "Pending");
  EXPECT_NE(waiting.message.find("insufficient quota"), std::string::npos);

  json admitted = AdmittedWorkload(job, 3);  // partial admission: 3 of 4
  QueueAdmission a = ObserveAdmission("team-a", &admitted, flavors);
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(a.admitted_count, 3);
  EXPECT_EQ(a.cluster_queue, "cq");
  EXPECT_EQ(a.node_selector, json({{"pool", "a100"}}));
  ASSERT_EQ(a.tolerations.size(), 1u);

  kube::Store empty;
  QueueAdmission unknown_flavor = ObserveAdmission("team-a", &admitted, empty);
  EXPECT_FALSE(unknown_flavor.admitted);  // its pods would land anywhere: wait for the flavour
  EXPECT_EQ(unknown_flavor.missing_flavor, "gpu-a");

  json evicted = admitted;
  evicted["status"]["conditions"].push_back(
      Condition("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: x) due to prioritization"));
  QueueAdmission e = ObserveAdmission("team-a", &evicted, flavors);
  EXPECT_TRUE(e.evicted);
  EXPECT_FALSE(e.admitted);
  EXPECT_EQ(e.reason, "Preempted");
}

TEST(QueueAdmissionTest, AnEvictedAdmissionIsGivenBackOnlyOnceNoPodIsLeft) {
  json job = QueuedJob(2, 4);
  json wl = AdmittedWorkload(job, 4);
  wl["status"]["conditions"].push_back(Condition("Evicted", "True", "Preempted", "Preempted to accommodate ..."));
  const std::string now = FormatRfc3339(kT0 + std::chrono::seconds(9));

  WorkloadPlan waiting = PlanWorkload(job, SpecOf(job), wl, "Suspended", /*pods_left=*/true, now);
  EXPECT_FALSE(waiting.status_patch);  // a terminating worker still holds its GPU
  EXPECT_FALSE(waiting.spec_patch);

  WorkloadPlan given_back = PlanWorkload(job, SpecOf(job), wl, "Suspended", /*pods_left=*/false, now);
  ASSERT_TRUE(given_back.status_patch);
  const json& patch = *given_back.status_patch;
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "7");  // a concurrent change by Kueue is a Conflict
  EXPECT_TRUE(patch["status"]["admission"].is_null());
  std::map<std::string, json> by_type;
  for (const auto& c : patch["status"]["conditions"]) by_type[c["type"]] = c;
  EXPECT_EQ(by_type["QuotaReserved"]["status"], "False");
  EXPECT_EQ(by_type["QuotaReserved"]["reason"], "Pending");
  EXPECT_EQ(by_type["QuotaReserved"]["lastTransitionTime"], now);
  EXPECT_EQ(by_type["Admitted"]["status"], "False");
  EXPECT_EQ(by_type["Requeued"]["status"], "True");  // preempted: queued again
  EXPECT_EQ(by_type["Evicted"]["status"], "True");   // Kueue's own, kept
}

TEST(QueueAdmissionTest, TheWorkloadFollowsTheJobsSizeWhileQueuedAndItsEnd) {
  json job = QueuedJob(2, 4);
  json wl = AdmittedWorkload(job, 4);
  wl["status"] = {{"conditions", {Condition("QuotaReserved", "False", "Pending", "insufficient quota")}}};
  const std::string now = FormatRfc3339(kT0);

  json scaled = job;
  scaled["spec"]["replicas"]["desired"] = 3;
  WorkloadPlan resize = PlanWorkload(scaled, SpecOf(scaled), wl, "Suspended", false, now);
  ASSERT_TRUE(resize.spec_patch);
  EXPECT_EQ((*resize.spec_patch)["spec"]["podSets"][0]["count"], 3);
  EXPECT_EQ((*resize.spec_patch)["spec"]["podSets"][0]["minCount"], 2);

  json held = AdmittedWorkload(job, 4);  // holding quota: Kueue refuses pod-set changes
  EXPECT_FALSE(PlanWorkload(scaled, SpecOf(scaled), held, "Running", true, now).spec_patch);

  json suspended = job;
  suspended["spec"]["runPolicy"] = {{"suspend", true}};
  WorkloadPlan deactivate = PlanWorkload(suspended, SpecOf(suspended), held, "Suspended", true, now);
  ASSERT_TRUE(deactivate.spec_patch);
  EXPECT_EQ((*deactivate.spec_patch)["spec"]["active"], false);

  WorkloadPlan done = PlanWorkload(job, SpecOf(job), held, "Succeeded", false, now);
  ASSERT_TRUE(done.status_patch);
  bool finished = false;
  for (const auto& c : (*done.status_patch)["status"]["conditions"])
    finished |= c["type"] == "Finished" && c["status"] == "True" && c["reason"] == "Succeeded";
  EXPECT_TRUE(finished);

  EXPECT_FALSE(PlanWorkload(job, SpecOf(job), wl, "Suspended", false, now).spec_patch);  // in step: nothing
}

PlanInput QueuedInput(json job, std::vector<json> pods, std::optional<QueueAdmission> queue) {
  PlanInput in;
  in.job = std::move(job);
  in.pods = std::move(pods);
  in.nodes = {{"n0", NodeState{}}};
  in.now = kT0;
  in.queue = std::move(queue);
  return in;
}

json ReadyPod(int index) {
  return {{"metadata",
           {{"name", "j-worker-" + std::to_string(index)},
            {"uid", "pod-uid-" + std::to_string(index)},
            {"labels", {{api::kJobNameLabel, "j"}, {api::kWorkerIndexLabel, std::to_string(index)}}}}},
          {"spec", {{"nodeName", "n0"}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", "127.64.0." + std::to_string(index + 1)},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", FormatRfc3339(kT0)}}}}}}};
}

TEST(QueueAdmissionTest, AQueuedJobWaitsSuspendedRunsCappedAtItsAdmissionAndSuspendsWhenEvicted) {
  kube::Store flavors;
  AddFlavors(&flavors);
  json job = QueuedJob(2, 4);

  // Not admitted: no pod, Suspended with Kueue's words.
  json pending = AdmittedWorkload(job, 4);
  pending["status"] = {{"conditions", {Condition("QuotaReserved", "False", "Pending", "insufficient quota")}}};
  auto queued = PlanJob(QueuedInput(job, {}, ObserveAdmission("team-a", &pending, flavors)));
  ASSERT_OK(queued);
  EXPECT_TRUE(queued->creates.empty());
  EXPECT_EQ((*queued->status)["phase"], "Suspended");
  bool says_why = false;
  for (const auto& c : (*queued->status)["conditions"])
    says_why |= c["type"] == "Suspended" && c["reason"] == "Queued" &&
                c["message"].get<std::string>().find("insufficient quota") != std::string::npos;
  EXPECT_TRUE(says_why) << queued->status->dump();
  job = WithStatusOf(job, *queued);

  // Admitted with 3 of 4 (partial admission): 3 workers, on the flavour's nodes.
  json admitted = AdmittedWorkload(job, 3);
  auto running = PlanJob(QueuedInput(job, {}, ObserveAdmission("team-a", &admitted, flavors)));
  ASSERT_OK(running);
  ASSERT_EQ(running->creates.size(), 3u);
  EXPECT_EQ(running->creates[0]["spec"]["nodeSelector"]["pool"], "a100");
  EXPECT_EQ(running->creates[0]["spec"]["tolerations"][0]["key"], "pool");
  EXPECT_EQ((*running->status)["replicas"]["desired"], 4);  // what the user asked for
  job = WithStatusOf(job, *running);
  std::vector<json> pods = {ReadyPod(0), ReadyPod(1), ReadyPod(2)};
  auto members = PlanJob(QueuedInput(job, pods, ObserveAdmission("team-a", &admitted, flavors)));
  ASSERT_OK(members);
  EXPECT_EQ((*members->status)["membership"]["worldSize"], 3);
  job = WithStatusOf(job, *members);

  // Evicted: an empty generation (the workers commit and leave), every pod deleted.
  json evicted = admitted;
  evicted["status"]["conditions"].push_back(Condition("Evicted", "True", "Preempted", "Preempted to accommodate"));
  auto suspended = PlanJob(QueuedInput(job, pods, ObserveAdmission("team-a", &evicted, flavors)));
  ASSERT_OK(suspended);
  EXPECT_EQ(suspended->deletes.size(), 3u);
  EXPECT_EQ((*suspended->status)["phase"], "Suspended");
  EXPECT_EQ((*suspended->status)["membership"]["worldSize"], 0);
  EXPECT_EQ((*suspended->status)["membership"]["reason"], "Suspended");
  ASSERT_FALSE(suspended->events.empty());
  EXPECT_EQ(suspended->events.back().reason, "Evicted");
}

TEST(QueueAdmissionTest, WithoutKueueAQueuedJobStaysSuspendedAndSaysWhatToDo) {
  QueueAdmission absent;
  absent.queue = "team-a";
  absent.kueue_served = false;
  auto plan = PlanJob(QueuedInput(QueuedJob(1, 2), {}, absent));
  ASSERT_OK(plan);
  EXPECT_TRUE(plan->creates.empty());
  EXPECT_EQ((*plan->status)["phase"], "Suspended");
  EXPECT_NE(plan->status->dump().find("install Kueue"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::controller
