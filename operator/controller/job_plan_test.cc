#include "operator/controller/job_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/names.h"
#include "api/training_job.h"
#include "base/status_test_macros.h"
#include "base/time_format.h"
#include "operator/controller/job_spec.h"
#include "operator/controller/worker_objects.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

const Clock::time_point kT0 = Clock::from_time_t(1'800'000'000);

json Job(int min, int max, json extra_spec = json::object()) {
  json job = {{"apiVersion", api::kApiVersion},
              {"kind", api::kKind},
              {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "job-uid"}, {"generation", 1}}},
              {"spec",
               {{"replicas", {{"min", min}, {"max", max}}},
                {"elasticPolicy", {{"joinBatchWindowSeconds", 5}, {"nodeUnresponsiveSeconds", 20}, {"maxRestarts", 2}}},
                {"template", {{"spec", {{"containers", {{{"name", "t"}, {"image", "i"}}}}}}}}}}};
  job["spec"].update(extra_spec);
  return job;
}

json Pod(int index, const std::string& phase, bool ready, const std::string& node = "n0",
         Clock::time_point since = kT0) {
  json pod = {{"metadata",
               {{"name", "j-worker-" + std::to_string(index)},
                {"uid", "pod-uid-" + std::to_string(index)},
                {"labels", {{api::kJobNameLabel, "j"}, {api::kWorkerIndexLabel, std::to_string(index)}}}}},
              {"spec", {{"nodeName", node}}},
              {"status", {{"phase", phase}, {"podIP", "127.64.0." + std::to_string(index + 1)}}}};
  if (ready) {
    pod["status"]["conditions"] = {
        {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", FormatRfc3339(since)}}};
  }
  return pod;
}

json FailedPod(int index, int exit_code) {
  json pod = Pod(index, "Failed", false);
  pod["status"]["containerStatuses"] = {
      {{"name", "t"}, {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", "Error"}}}}}}};
  return pod;
}

PlanInput Input(json job, std::vector<json> pods, Clock::time_point now = kT0) {
  return PlanInput{std::move(job), std::move(pods), {{"n0", NodeState{}}, {"n1", NodeState{}}}, now, {}, {}, {}};
}

// Applies a plan's status to the job, as the apiserver would.
json WithStatus(json job, const JobPlan& plan) {
  if (plan.status) job["status"] = *plan.status;
  return job;
}

std::vector<std::string> Names(const std::vector<json>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p["metadata"]["name"]);
  return out;
}

TEST(PlanJobTest, NewJobCreatesMaxWorkersAndWaitsForTheGang) {
  auto plan = PlanJob(Input(Job(2, 3), {}));
  ASSERT_OK(plan) << plan.status();
  EXPECT_EQ(Names(plan->creates), (std::vector<std::string>{"j-worker-0", "j-worker-1", "j-worker-2"}));
  ASSERT_TRUE(plan->status.has_value());
  EXPECT_EQ((*plan->status)["phase"], "Pending");
  EXPECT_EQ((*plan->status)["selector"], std::string(api::kJobNameLabel) + "=j");
  EXPECT_FALSE(plan->status->contains("membership"));
}

TEST(PlanJobTest, SteadyStateIsAnEmptyPlan) {
  json job = Job(2, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  auto first = PlanJob(Input(job, pods));
  ASSERT_OK(first);
  ASSERT_TRUE(first->status.has_value());
  EXPECT_EQ((*first->status)["membership"]["generation"], 1);
  EXPECT_EQ((*first->status)["phase"], "Running");
  auto second = PlanJob(Input(WithStatus(job, *first), pods, kT0 + seconds(100)));
  ASSERT_OK(second);
  EXPECT_TRUE(second->empty()) << (second->status ? second->status->dump(2) : "");
}

// With spec.runPolicy.keepFailedPods 0 a failed pod goes at once and its replacement reuses its name.
TEST(PlanJobTest, FailedWorkerIsCountedOnceDeletedAndReplacedAfterBackoff) {
  json job = Job(1, 2, {{"runPolicy", {{"keepFailedPods", 0}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));

  pods[1] = FailedPod(1, 137);
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan) << plan.status();
  ASSERT_EQ(plan->deletes.size(), 1u);
  EXPECT_EQ(plan->deletes[0].name, "j-worker-1");
  EXPECT_EQ((*plan->status)["restartCount"], 1);
  EXPECT_EQ((*plan->status)["membership"]["generation"], 2);
  EXPECT_EQ((*plan->status)["membership"]["reason"], "WorkerFailed");
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 1);
  EXPECT_TRUE(plan->creates.empty());  // its name is still taken

  // Seen again before the deletion lands: not counted twice.
  job = WithStatus(job, *plan);
  auto again = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(again);
  EXPECT_EQ(again->status ? (*again->status)["restartCount"].get<int>() : 1, 1);

  // Gone: replaced at the same index once the backoff (1 s after one restart) has passed.
  pods.pop_back();
  auto early = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(early);
  EXPECT_TRUE(early->creates.empty());
  ASSERT_TRUE(early->requeue_at.has_value());
  auto later = PlanJob(Input(job, pods, kT0 + seconds(12)));
  ASSERT_OK(later);
  EXPECT_EQ(Names(later->creates), (std::vector<std::string>{"j-worker-1"}));
}

json ConditionOf(const json& status, const std::string& type);  // below

// A worker that cannot go on (a sticky CUDA error) exits with a termination message naming its node, GPU and
// error (api/worker_termination.h): recentFailures records where and what, the Event says it, and the pod is
// replaced as any failed worker's. A failure without a message records the pod's node alone.
TEST(PlanJobTest, AFailedWorkersTerminationMessageNamesItsNodeAndGpuInRecentFailures) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true, "n1")};
  job = WithStatus(job, *PlanJob(Input(job, pods)));

  const std::string said =
      "worker j-worker-1 on node n1, GPU 1 (GPU-8932f937): DataLoss: GPU 1: cudaErrorIllegalAddress: an illegal "
      "memory access was encountered";
  pods[1] = FailedPod(1, 3);
  pods[1]["spec"]["nodeName"] = "n1";
  pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = said;
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(600)));
  ASSERT_OK(plan) << plan.status();
  ASSERT_EQ((*plan->status)["recentFailures"].size(), 1u);
  const json& f = (*plan->status)["recentFailures"][0];
  EXPECT_EQ(f["pod"], "j-worker-1");
  EXPECT_EQ(f["exitCode"], 3);
  EXPECT_EQ(f["node"], "n1");
  EXPECT_EQ(f["gpu"], "1 (GPU-8932f937)");
  EXPECT_EQ(f["message"], said);
  bool told = false;
  for (const auto& e : plan->events)
    told |= e.reason == "WorkerFailed" && e.message.find("cudaErrorIllegalAddress") != std::string::npos;
  EXPECT_TRUE(told) << "no WorkerFailed event says what the worker said";
  // The status reads back as the API's type (the CRD's fields).
  job = WithStatus(job, *plan);
  auto decoded = api::DecodeTrainingJob(job);
  ASSERT_OK(decoded) << decoded.status();
  ASSERT_EQ(decoded->status.recent_failures.size(), 1u);
  EXPECT_EQ(decoded->status.recent_failures[0].gpu, "1 (GPU-8932f937)");

  // Replaced as any failed worker.
  pods.pop_back();
  auto later = PlanJob(Input(job, pods, kT0 + seconds(700)));
  ASSERT_OK(later);
  EXPECT_EQ(later->creates.size(), 1u) << "the failed worker was not replaced";

  // No message (killed, say): the node is the pod's, no GPU, no message.
  pods.push_back(FailedPod(1, 137));
  pods.back()["metadata"]["uid"] = "pod-uid-1b";
  auto killed = PlanJob(Input(job, pods, kT0 + seconds(800)));
  ASSERT_OK(killed);
  const json& k = (*killed->status)["recentFailures"].back();
  EXPECT_EQ(k["uid"], "pod-uid-1b");
  EXPECT_EQ(k["node"], "n0");
  EXPECT_FALSE(k.contains("gpu"));
  EXPECT_FALSE(k.contains("message"));
}

// A log tail (FallbackToLogsOnError) is no message of ours: kept (cut to 1,024 bytes), naming no GPU.
TEST(PlanJobTest, ALogTailIsKeptAsTheMessageCutAndNamesNoGpu) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  pods[1] = FailedPod(1, 1);
  pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["message"] =
      "Traceback (most recent call last):\n" + std::string(3000, 'x');
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(600)));
  ASSERT_OK(plan) << plan.status();
  const json& f = (*plan->status)["recentFailures"][0];
  EXPECT_EQ(f["node"], "n0");
  EXPECT_FALSE(f.contains("gpu"));
  EXPECT_EQ(f["message"].get<std::string>().size(), api::kFailureMessageKept);
  EXPECT_EQ(f["message"].get<std::string>().rfind("Traceback", 0), 0u);
}

// By default a failed worker's pod stays, so `kubectl logs` reads what it printed: its failure is counted once,
// the Event says where its logs are, its replacement takes the next free index (a new name), and only the newest
// spec.runPolicy.keepFailedPods failed pods are kept.
TEST(PlanJobTest, AFailedWorkersPodIsKeptForItsLogsAndItsReplacementTakesANewName) {
  json job = Job(1, 2, {{"runPolicy", {{"keepFailedPods", 2}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));

  pods[1] = FailedPod(1, 1);
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(600)));
  ASSERT_OK(plan) << plan.status();
  EXPECT_TRUE(plan->deletes.empty());
  EXPECT_EQ((*plan->status)["restartCount"], 1);
  EXPECT_EQ((*plan->status)["recentFailures"][0]["pod"], "j-worker-1");
  EXPECT_EQ((*plan->status)["replicas"]["failed"], 1);
  bool told = false;
  for (const auto& e : plan->events)
    told |= e.reason == "WorkerFailed" && e.message.find("kubectl logs -n ns j-worker-1") != std::string::npos;
  EXPECT_TRUE(told) << "no WorkerFailed event names the kept pod's logs";
  job = WithStatus(job, *plan);

  // After the backoff the replacement is created at a new index; the failed pod is not counted again.
  auto later = PlanJob(Input(job, pods, kT0 + seconds(602)));
  ASSERT_OK(later);
  EXPECT_EQ(Names(later->creates), (std::vector<std::string>{"j-worker-2"}));
  EXPECT_TRUE(later->deletes.empty());
  EXPECT_FALSE(later->status && (*later->status)["restartCount"] != 1);

  // Two more failures: the oldest failed pod goes, the newest two stay.
  pods.push_back(FailedPod(2, 1));
  pods.push_back(FailedPod(3, 1));
  auto more = PlanJob(Input(job, pods, kT0 + seconds(700)));
  ASSERT_OK(more);
  EXPECT_EQ((*more->status)["restartCount"], 3);
  ASSERT_EQ(more->deletes.size(), 1u);
  EXPECT_EQ(more->deletes[0].name, "j-worker-1");
}

// A pod deleted with no grace (kubectl delete --force --grace-period=0) is a loss, not an orderly departure: its
// container is killed at once, so the generation that drops it is no Disrupted one waiting for a step boundary.
TEST(PlanJobTest, APodDeletedWithoutGraceIsLostNotDisrupted) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  pods[1]["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0 + seconds(10));
  pods[1]["metadata"]["deletionGracePeriodSeconds"] = 0;
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan);
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 1);
  EXPECT_NE((*plan->status)["membership"]["reason"], "Disrupted") << plan->status->dump();

  // With a grace period it is a departure at the step boundary.
  pods[1]["metadata"]["deletionGracePeriodSeconds"] = 30;
  auto graceful = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(graceful);
  EXPECT_EQ((*graceful->status)["membership"]["reason"], "Disrupted") << graceful->status->dump();
}

// A pod no node can take is named with the scheduler's words. The job waits (WaitingForWorkers, not
// WorkerCannotStart): capacity may come.
TEST(PlanJobTest, AWorkerTheSchedulerCannotPlaceIsNamedInTheRunningCondition) {
  json pod = Pod(0, "Pending", false, "");
  pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                  {"status", "False"},
                                  {"reason", "Unschedulable"},
                                  {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}};
  auto plan = PlanJob(Input(Job(1, 1), {pod}));
  ASSERT_OK(plan);
  const json running = ConditionOf(*plan->status, "Running");
  EXPECT_EQ(running.value("reason", ""), "WaitingForWorkers");
  EXPECT_NE(running.value("message", "").find("worker pod j-worker-0 is Unschedulable: 0/3 nodes are available"),
            std::string::npos)
      << running.dump();
  EXPECT_TRUE(plan->events.empty());  // the scheduler's FailedScheduling Events are on the pod
}

// A worker whose image cannot be pulled is a Warning Event on the job too, once per cause.
TEST(PlanJobTest, AWorkerThatCannotStartIsAnEventOnTheJobOncePerCause) {
  json pod = Pod(0, "Pending", false);
  pod["status"]["containerStatuses"] = {
      {{"name", "t"},
       {"state", {{"waiting", {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"i\""}}}}}}};
  auto plan = PlanJob(Input(Job(1, 1), {pod}));
  ASSERT_OK(plan);
  ASSERT_EQ(plan->events.size(), 1u);
  EXPECT_EQ(plan->events[0].reason, "WorkerCannotStart");
  EXPECT_NE(plan->events[0].message.find("j-worker-0: ImagePullBackOff"), std::string::npos);
  auto again = PlanJob(Input(WithStatus(Job(1, 1), *plan), {pod}, kT0 + seconds(5)));
  ASSERT_OK(again);
  EXPECT_TRUE(again->events.empty());
}

// A pod the apiserver refuses (quota, PodSecurity) is named in the Running condition with reason FailedCreate,
// before a pod that cannot start.
TEST(PlanJobTest, APodTheApiserverRefusesIsNamedInTheRunningCondition) {
  PlanInput in = Input(Job(2, 2), {});
  in.create_error = "cannot create worker pod j-worker-0: exceeded quota: gpus, requested: nvidia.com/gpu=8";
  auto plan = PlanJob(in);
  ASSERT_OK(plan);
  const json& running = ConditionOf(*plan->status, "Running");
  EXPECT_EQ(running.value("status", ""), "False");
  EXPECT_EQ(running.value("reason", ""), "FailedCreate");
  EXPECT_NE(running.value("message", "").find("exceeded quota"), std::string::npos) << running.dump();
}

// The active deadline counts from the job's first active reconcile (status.startTime, set then, as a Kubernetes
// Job's), not from its first membership: a job whose workers never become Ready still fails in time.
TEST(PlanJobTest, TheActiveDeadlineCountsFromTheStartEvenWithoutAnyReadyWorker) {
  json job = Job(2, 2, {{"runPolicy", {{"activeDeadlineSeconds", 60}}}});
  auto first = PlanJob(Input(job, {}));
  ASSERT_OK(first);
  EXPECT_EQ((*first->status)["startTime"], FormatRfc3339(kT0));
  ASSERT_TRUE(first->requeue_at.has_value());
  EXPECT_LE(*first->requeue_at, kT0 + seconds(60));
  job = WithStatus(job, *first);
  std::vector<json> pending = {Pod(0, "Pending", false), Pod(1, "Pending", false)};
  auto due = PlanJob(Input(job, pending, kT0 + seconds(61)));
  ASSERT_OK(due);
  EXPECT_EQ((*due->status)["phase"], "Failed");
  EXPECT_EQ(ConditionOf(*due->status, "Failed").value("reason", ""), "DeadlineExceeded");
}

// A failure late in a second still waits the whole backoff: the failure time keeps its milliseconds,
// so the replacement never races the failed pod's deletion for its index.
TEST(PlanJobTest, AMemberItsPeersCannotReachLeavesAndItsPodIsReplacedWithoutCountingAFailure) {
  json job = Job(2, 3);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  ASSERT_EQ(job["status"]["membership"]["generation"], 1);

  PlanInput in = Input(job, pods, kT0 + seconds(10));
  in.peer_reports = {{"j-worker-0", 1, {"j-worker-2"}, ""},
                     {"j-worker-1", 1, {"j-worker-2"}, ""},
                     {"j-worker-2", 1, {"j-worker-0", "j-worker-1"}, ""}};
  auto plan = PlanJob(in);
  ASSERT_OK(plan) << plan.status();
  ASSERT_EQ(plan->deletes.size(), 1u);
  EXPECT_EQ(plan->deletes[0].name, "j-worker-2");
  EXPECT_NE(plan->deletes[0].why.find("reported by j-worker-0, j-worker-1 in generation 1"), std::string::npos)
      << plan->deletes[0].why;
  const json& m = (*plan->status)["membership"];
  EXPECT_EQ(m["generation"], 2);
  EXPECT_EQ(m["worldSize"], 2);
  EXPECT_EQ(m["reason"], "PeerUnreachable");
  EXPECT_EQ((*plan->status)["restartCount"], 0);
  // Replaced at once at a fresh index, as a worker lost with its node is: no failure, no backoff.
  EXPECT_EQ(Names(plan->creates), (std::vector<std::string>{"j-worker-3"}));

  // Level-based: with its pod being deleted, the same reports change the membership no further.
  job = WithStatus(job, *plan);
  pods[2]["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0 + seconds(10));
  pods.push_back(Pod(3, "Pending", false));
  in = Input(job, pods, kT0 + seconds(11));
  in.peer_reports = {{"j-worker-0", 1, {"j-worker-2"}, ""}, {"j-worker-1", 1, {"j-worker-2"}, ""}};
  plan = PlanJob(in);
  ASSERT_OK(plan);
  EXPECT_TRUE(plan->creates.empty());
  if (plan->status) {
    EXPECT_EQ((*plan->status)["membership"]["generation"], 2);
  }
}

// A world of two whose rank 0 is cut from its peer but not from the apiserver: both report each other,
// and rank 0's Ready condition has just gone False (its container still runs, within the readiness-loss
// grace). The verdict keeps the Ready rank 1, renumbered to rank 0, and drops rank 0 in one generation.
TEST(PlanJobTest, AWorldOfTwoReportingEachOtherKeepsTheReadyMember) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  ASSERT_EQ(job["status"]["membership"]["generation"], 1);

  const auto now = kT0 + seconds(10);
  pods[0]["status"]["conditions"] = {
      {{"type", "Ready"}, {"status", "False"}, {"lastTransitionTime", FormatRfc3339(now)}}};
  PlanInput in = Input(job, pods, now);
  in.peer_reports = {{"j-worker-0", 1, {"j-worker-1"}, ""}, {"j-worker-1", 1, {"j-worker-0"}, ""}};
  auto plan = PlanJob(in);
  ASSERT_OK(plan) << plan.status();
  ASSERT_EQ(plan->deletes.size(), 1u);
  EXPECT_EQ(plan->deletes[0].name, "j-worker-0");
  EXPECT_NE(plan->deletes[0].why.find("reported by j-worker-1 in generation 1"), std::string::npos)
      << plan->deletes[0].why;
  ASSERT_TRUE(plan->status.has_value());
  const json& m = (*plan->status)["membership"];
  EXPECT_EQ(m["generation"], 2);
  EXPECT_EQ(m["reason"], "PeerUnreachable");
  EXPECT_EQ(m["worldSize"], 1);
  ASSERT_EQ(m["members"].size(), 1u);
  EXPECT_EQ(m["members"][0]["pod"], "j-worker-1");
  EXPECT_EQ(m["members"][0]["rank"], 0);
}

TEST(PlanJobTest, ReplacementBackoffCountsFromTheExactFailureTime) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  const auto failed_at = kT0 + seconds(10) + std::chrono::milliseconds(900);
  pods[1] = FailedPod(1, 1);
  auto plan = PlanJob(Input(job, pods, failed_at));
  ASSERT_OK(plan);
  job = WithStatus(job, *plan);
  pods.pop_back();
  for (auto at : {failed_at + std::chrono::milliseconds(150), failed_at + std::chrono::milliseconds(950)}) {
    auto early = PlanJob(Input(job, pods, at));
    ASSERT_OK(early);
    EXPECT_TRUE(early->creates.empty()) << "replaced " << (at - failed_at).count() << " ns after the failure";
    ASSERT_TRUE(early->requeue_at.has_value());
    EXPECT_EQ(*early->requeue_at, failed_at + seconds(1));
  }
  auto later = PlanJob(Input(job, pods, failed_at + seconds(1)));
  ASSERT_OK(later);
  EXPECT_EQ(Names(later->creates), (std::vector<std::string>{"j-worker-1"}));
}

// The backoff counts the failures of the last 10 minutes only: after many old ones, a new failure's
// replacement waits 1 s, not the 60 s cap.
TEST(PlanJobTest, OldFailuresNoLongerLengthenTheReplacementBackoff) {
  json job = Job(1, 2);
  job["spec"]["elasticPolicy"] = {{"maxRestarts", 100}};
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  json old = json::array();
  for (int i = 0; i < 8; ++i) {
    old.push_back({{"pod", "j-worker-1"},
                   {"uid", "old-" + std::to_string(i)},
                   {"exitCode", 137},
                   {"time", FormatRfc3339(kT0 + seconds(i), TimePrecision::kMillis)}});
  }
  job["status"]["recentFailures"] = old;
  job["status"]["restartCount"] = 8;
  const auto failed_at = kT0 + std::chrono::minutes(30);
  pods[1] = FailedPod(1, 137);
  auto plan = PlanJob(Input(job, pods, failed_at));
  ASSERT_OK(plan) << plan.status();
  EXPECT_EQ((*plan->status)["restartCount"], 9);
  job = WithStatus(job, *plan);
  pods.pop_back();
  auto later = PlanJob(Input(job, pods, failed_at + seconds(1)));
  ASSERT_OK(later);
  EXPECT_EQ(Names(later->creates), (std::vector<std::string>{"j-worker-1"})) << "held by failures 30 minutes old";
  // Within the window they still count: the same failures 5 minutes before wait 2^(9-1) s capped at 60.
  for (auto& f : job["status"]["recentFailures"]) {
    if (f.value("uid", "").rfind("old-", 0) == 0)
      f["time"] = FormatRfc3339(failed_at - std::chrono::minutes(5), TimePrecision::kMillis);
  }
  auto held = PlanJob(Input(job, pods, failed_at + seconds(1)));
  ASSERT_OK(held);
  EXPECT_TRUE(held->creates.empty());
  ASSERT_TRUE(held->requeue_at.has_value());
  EXPECT_EQ(*held->requeue_at, failed_at + seconds(60));
}

// Only failures after a short run look like a crash loop: eight kills of workers that had trained for
// minutes hold nothing back (their replacement comes at once), and the failure's run is recorded
// (recentFailures[].ranSeconds); eight failures seconds after their start do hold it back.
TEST(PlanJobTest, FailuresAfterALongRunDoNotLengthenTheReplacementBackoff) {
  json job = Job(1, 2);
  job["spec"]["elasticPolicy"] = {{"maxRestarts", 100}};
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  const auto failed_at = kT0 + std::chrono::minutes(30);
  json failures = json::array();
  for (int i = 0; i < 8; ++i) {
    failures.push_back({{"pod", "j-worker-1"},
                        {"uid", "old-" + std::to_string(i)},
                        {"exitCode", 137},
                        {"ranSeconds", 300},
                        {"time", FormatRfc3339(failed_at - seconds(60 - i), TimePrecision::kMillis)}});
  }
  job["status"]["recentFailures"] = failures;
  job["status"]["restartCount"] = 8;
  pods[1] = FailedPod(1, 137);
  pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"] =
      FormatRfc3339(failed_at - std::chrono::minutes(4));
  pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = FormatRfc3339(failed_at);
  auto plan = PlanJob(Input(job, pods, failed_at));
  ASSERT_OK(plan) << plan.status();
  EXPECT_EQ((*plan->status)["recentFailures"].back()["ranSeconds"], 240);
  job = WithStatus(job, *plan);
  pods.pop_back();
  auto replaced = PlanJob(Input(job, pods, failed_at + std::chrono::milliseconds(10)));
  ASSERT_OK(replaced);
  EXPECT_EQ(Names(replaced->creates), (std::vector<std::string>{"j-worker-1"})) << "held back by long runs' failures";

  for (auto& f : job["status"]["recentFailures"]) f["ranSeconds"] = 3;  // the same failures, each 3 s after its start
  auto held = PlanJob(Input(job, pods, failed_at + std::chrono::milliseconds(10)));
  ASSERT_OK(held);
  EXPECT_TRUE(held->creates.empty());
}

// A scale-up's workers are created at once, even while a failed worker's replacement waits for the backoff.
TEST(PlanJobTest, AScaleUpIsNotHeldBackByTheReplacementBackoff) {
  json job = Job(1, 4);
  job["spec"]["replicas"]["desired"] = 2;
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  pods[1] = FailedPod(1, 1);  // no run time: counts as a crash
  job = WithStatus(job, *PlanJob(Input(job, pods, kT0 + seconds(10))));
  pods.pop_back();
  job["spec"]["replicas"]["desired"] = 3;
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10) + std::chrono::milliseconds(100)));
  ASSERT_OK(plan);
  ASSERT_EQ(plan->creates.size(), 1u) << "the scale-up's worker waited for the replacement backoff";
  EXPECT_EQ(plan->creates[0]["metadata"]["annotations"][std::string(api::kCreatedForAnnotation)],
            std::string(api::created_for::kScaleUp));
  ASSERT_TRUE(plan->requeue_at.has_value());  // the replacement comes after the backoff
  EXPECT_EQ(*plan->requeue_at, kT0 + seconds(11));
}

// spec.replicas.spares: the operator keeps that many Ready workers beyond desired, outside the world.
TEST(PlanJobTest, WarmSparesAreStartedAndKeptOutOfTheWorld) {
  json job = Job(1, 4, {{"replicas", {{"min", 1}, {"max", 4}, {"desired", 2}, {"spares", 1}}}});
  auto plan = PlanJob(Input(job, {}));
  ASSERT_OK(plan) << plan.status();
  EXPECT_EQ(Names(plan->creates), (std::vector<std::string>{"j-worker-0", "j-worker-1", "j-worker-2"}));
  job = WithStatus(job, *plan);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  plan = PlanJob(Input(job, pods, kT0 + seconds(1)));
  ASSERT_OK(plan);
  const json& m = (*plan->status)["membership"];
  EXPECT_EQ(m["worldSize"], 2);
  EXPECT_EQ(m["members"][0]["pod"], "j-worker-0");
  EXPECT_EQ(m["members"][1]["pod"], "j-worker-1");
  EXPECT_EQ((*plan->status)["replicas"]["spares"], 1);
  bool said = false;
  for (const auto& c : (*plan->status)["conditions"])
    said |= c["type"] == "Running" &&
            c["message"].get<std::string>().find("1 Ready worker waiting as a spare") != std::string::npos;
  EXPECT_TRUE(said) << plan->status->dump(2);
  EXPECT_TRUE(plan->creates.empty());
  EXPECT_TRUE(plan->deletes.empty());
  job = WithStatus(job, *plan);
  // Steady: the spare stays out, no window keeps the plan coming back.
  auto steady = PlanJob(Input(job, pods, kT0 + seconds(30)));
  ASSERT_OK(steady);
  EXPECT_TRUE(steady->empty()) << (steady->status ? steady->status->dump(2) : "");
}

// A lost member's place goes to the spare in the generation that removes it (no batch window, no new pod on
// the way); the new spare is created after the replacement backoff.
TEST(PlanJobTest, TheSpareTakesALostMembersPlaceInTheSameGeneration) {
  json job = Job(1, 4, {{"replicas", {{"min", 1}, {"max", 4}, {"desired", 2}, {"spares", 1}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  ASSERT_EQ(job["status"]["membership"]["worldSize"], 2);
  pods[1] = FailedPod(1, 137);
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan) << plan.status();
  const json& m = (*plan->status)["membership"];
  EXPECT_EQ(m["generation"], 2);
  EXPECT_EQ(m["reason"], "WorkerFailed");
  EXPECT_EQ(m["worldSize"], 2);
  EXPECT_EQ(m["members"][1]["pod"], "j-worker-2");
  EXPECT_NE(m["message"].get<std::string>().find("joined: j-worker-2"), std::string::npos) << m.dump();
  EXPECT_EQ((*plan->status)["replicas"]["spares"], 0);
  job = WithStatus(job, *plan);
  pods.erase(pods.begin() + 1);
  auto later = PlanJob(Input(job, pods, kT0 + seconds(12)));
  ASSERT_OK(later);
  EXPECT_EQ(Names(later->creates), (std::vector<std::string>{"j-worker-1"}));  // the next spare
}

// Scaling down a job with a spare: the highest-ranked member leaves and the spare stays a spare.
TEST(PlanJobTest, AScaleDownWithASpareDropsAMemberAndKeepsTheSpare) {
  json job = Job(1, 4, {{"replicas", {{"min", 1}, {"max", 4}, {"desired", 3}, {"spares", 1}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true),
                            Pod(3, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  ASSERT_EQ(job["status"]["membership"]["worldSize"], 3);
  job["spec"]["replicas"]["desired"] = 2;
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(1)));
  ASSERT_OK(plan);
  EXPECT_EQ((*plan->status)["membership"]["reason"], "ScaledDown");
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 2);
  EXPECT_TRUE(plan->deletes.empty()) << plan->deletes[0].name;  // the leaver exits by itself; the spare stays
  ASSERT_EQ((*plan->status)["leaving"].size(), 1u);
  EXPECT_EQ((*plan->status)["leaving"][0]["pod"], "j-worker-2");
  EXPECT_EQ((*plan->status)["replicas"]["spares"], 1);
  EXPECT_TRUE(plan->creates.empty());
}

TEST(PlanJobTest, TooManyFailuresFailTheJob) {
  json job = Job(1, 1);
  job["status"] = {{"restartCount", 2}, {"recentFailures", json::array()}};
  auto plan = PlanJob(Input(job, {FailedPod(0, 1)}));
  ASSERT_OK(plan);
  EXPECT_EQ((*plan->status)["phase"], "Failed");
  bool found = false;
  for (const auto& c : (*plan->status)["conditions"])
    if (c["type"] == "Failed") found = c["reason"] == "RestartLimitExceeded";
  EXPECT_TRUE(found) << plan->status->dump(2);
}

TEST(PlanJobTest, NodeNotReadyPastTheWindowDropsItsWorkers) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true, "n0"), Pod(1, "Running", true, "n1")};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  PlanInput in = Input(job, pods, kT0 + seconds(10));
  in.nodes["n1"] = NodeState{false, kT0 + seconds(5), ""};
  auto within = PlanJob(in);
  ASSERT_OK(within);
  EXPECT_TRUE(within->deletes.empty());
  ASSERT_TRUE(within->requeue_at.has_value());
  EXPECT_EQ(*within->requeue_at, kT0 + seconds(25));
  in.now = kT0 + seconds(25);
  auto past = PlanJob(in);
  ASSERT_OK(past);
  EXPECT_EQ((*past->status)["membership"]["reason"], "NodeLost");
  EXPECT_EQ((*past->status)["membership"]["worldSize"], 1);
  ASSERT_EQ(past->deletes.size(), 1u);
  EXPECT_FALSE(past->deletes[0].force);
  EXPECT_EQ(Names(past->creates), (std::vector<std::string>{"j-worker-2"}));  // a replacement, not waiting
  // A node that no longer exists: its pods are force-deleted.
  in.nodes.erase("n1");
  auto gone = PlanJob(in);
  ASSERT_OK(gone);
  ASSERT_EQ(gone->deletes.size(), 1u);
  EXPECT_TRUE(gone->deletes[0].force);
}

// A lost node's pod stays Terminating (its kubelet cannot confirm): forceDeleteGraceSeconds after the deletion
// began -- deletionTimestamp less deletionGracePeriodSeconds, as the apiserver writes them -- it is forced.
TEST(PlanJobTest, APodTerminatingOnALostNodeIsForcedTheForceGraceAfterItsDeletionBegan) {
  json job = Job(1, 2,
                 {{"elasticPolicy",
                   {{"joinBatchWindowSeconds", 5}, {"nodeUnresponsiveSeconds", 20}, {"forceDeleteGraceSeconds", 5}}}});
  std::vector<json> pods = {Pod(0, "Running", true, "n0"), Pod(1, "Running", true, "n1")};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  const auto deleted_at = kT0 + seconds(20);
  pods[1]["metadata"]["deletionTimestamp"] = FormatRfc3339(deleted_at + seconds(30));  // a 30 s grace period
  pods[1]["metadata"]["deletionGracePeriodSeconds"] = 30;
  PlanInput in = Input(job, pods, deleted_at + seconds(4));
  in.nodes["n1"] = NodeState{false, kT0, ""};
  auto within = PlanJob(in);
  ASSERT_OK(within);
  for (const auto& d : within->deletes) EXPECT_FALSE(d.force) << d.name << " forced before the grace ended";
  ASSERT_TRUE(within->requeue_at.has_value());
  EXPECT_LE(*within->requeue_at, deleted_at + seconds(5)) << "no look again when the force grace ends";
  in.now = deleted_at + seconds(5);
  auto past = PlanJob(in);
  ASSERT_OK(past);
  ASSERT_EQ(past->deletes.size(), 1u);
  EXPECT_EQ(past->deletes[0].name, "j-worker-1");
  EXPECT_TRUE(past->deletes[0].force);
}

TEST(PlanJobTest, ScaleDownDropsTheHighestRankWhichExitsBeforeItsPodIsDeleted) {
  json job = Job(1, 3);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  job["spec"]["replicas"]["desired"] = 2;
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(1)));
  ASSERT_OK(plan);
  EXPECT_EQ((*plan->status)["membership"]["reason"], "ScaledDown");
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 2);
  // The dropped member is not deleted under its feet: it commits and exits 0 first (DESIGN.md, step 7).
  EXPECT_TRUE(plan->deletes.empty());
  EXPECT_TRUE(plan->creates.empty());
  ASSERT_EQ((*plan->status)["leaving"].size(), 1u) << plan->status->dump(2);
  EXPECT_EQ((*plan->status)["leaving"][0]["pod"], "j-worker-2");
  EXPECT_EQ((*plan->status)["leaving"][0]["uid"], "pod-uid-2");
  ASSERT_TRUE(plan->requeue_at.has_value());
  EXPECT_EQ(*plan->requeue_at, kT0 + seconds(61));  // leaveGraceSeconds defaults to 60
  job = WithStatus(job, *plan);

  // Still running a moment later: nothing changes (it never joins again, no replacement is made).
  auto steady = PlanJob(Input(job, pods, kT0 + seconds(2)));
  ASSERT_OK(steady);
  EXPECT_TRUE(steady->deletes.empty());
  EXPECT_TRUE(steady->creates.empty());
  EXPECT_FALSE(steady->status.has_value()) << steady->status->dump(2);

  // It exited 0: its pod is deleted, and the job goes on.
  std::vector<json> exited = pods;
  exited[2] = Pod(2, "Succeeded", false);
  auto gone = PlanJob(Input(job, exited, kT0 + seconds(3)));
  ASSERT_OK(gone);
  ASSERT_EQ(gone->deletes.size(), 1u);
  EXPECT_EQ(gone->deletes[0].name, "j-worker-2");
  EXPECT_EQ((*gone->status)["phase"], "Running");
  EXPECT_EQ((*gone->status)["restartCount"], 0);
  EXPECT_EQ((*gone->status)["membership"]["generation"], (*plan->status)["membership"]["generation"]);
  // Once its pod is gone it is forgotten.
  exited.pop_back();
  auto forgotten = PlanJob(Input(WithStatus(job, *gone), exited, kT0 + seconds(4)));
  ASSERT_OK(forgotten);
  ASSERT_TRUE(forgotten->status.has_value());
  EXPECT_FALSE(forgotten->status->contains("leaving"));

  // One that does not exit within the grace is deleted.
  auto overdue = PlanJob(Input(job, pods, kT0 + seconds(61)));
  ASSERT_OK(overdue);
  ASSERT_EQ(overdue->deletes.size(), 1u);
  EXPECT_EQ(overdue->deletes[0].name, "j-worker-2");
}

// Evicted through the Eviction API: the control plane marks the pod DisruptionTarget and deletes it with its
// grace period. The member leaves at once in a Disrupted generation (not a failure: no restart counted, no
// backoff), its replacement is created at once, and its exit -- 143 when its grace ran out -- is not a failure.
TEST(PlanJobTest, AnEvictedMemberLeavesInADisruptedGenerationAndItsExitIsNoFailure) {
  json job = Job(1, 3);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  ASSERT_EQ(job["status"]["membership"]["generation"], 1);

  pods[1]["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0 + seconds(40));
  pods[1]["metadata"]["deletionGracePeriodSeconds"] = 30;
  pods[1]["status"]["conditions"].push_back({{"type", "DisruptionTarget"},
                                             {"status", "True"},
                                             {"reason", "EvictionByEvictionAPI"},
                                             {"lastTransitionTime", FormatRfc3339(kT0 + seconds(10))}});
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan) << plan.status();
  const json& m = (*plan->status)["membership"];
  EXPECT_EQ(m["generation"], 2);
  EXPECT_EQ(m["reason"], "Disrupted");
  EXPECT_EQ(m["worldSize"], 2);
  EXPECT_NE(m["message"].get<std::string>().find("Disrupted: j-worker-1"), std::string::npos) << m.dump();
  EXPECT_EQ((*plan->status)["restartCount"], 0);
  EXPECT_TRUE(plan->deletes.empty());  // being deleted already, with its grace period: not cut short
  EXPECT_EQ(Names(plan->creates), (std::vector<std::string>{"j-worker-3"}));  // at once, elsewhere
  bool noted = false;
  for (const auto& e : plan->events) {
    EXPECT_NE(e.type, "Warning") << e.reason << ": " << e.message;
    if (e.reason == "Disrupted" &&
        e.message.find("worker j-worker-1 leaves generation 1 at its next step boundary") != std::string::npos) {
      noted = e.message.find("DisruptionTarget: EvictionByEvictionAPI") != std::string::npos;
    }
  }
  EXPECT_TRUE(noted) << "no Disrupted event naming the eviction";
  job = WithStatus(job, *plan);

  // Its grace ran out (SIGKILL, 137): not a failure, nothing counted, no backoff on the next replacement.
  pods[1]["status"]["phase"] = "Failed";
  pods[1]["status"]["conditions"][0]["status"] = "False";
  pods[1]["status"]["containerStatuses"] = {
      {{"name", "t"}, {"state", {{"terminated", {{"exitCode", 137}, {"reason", "Error"}}}}}}};
  pods.push_back(Pod(3, "Pending", false));
  auto stopped = PlanJob(Input(job, pods, kT0 + seconds(40)));
  ASSERT_OK(stopped);
  if (stopped->status) {
    EXPECT_EQ((*stopped->status)["restartCount"], 0);
    EXPECT_FALSE(stopped->status->contains("recentFailures") && !(*stopped->status)["recentFailures"].empty());
    EXPECT_EQ((*stopped->status)["membership"]["generation"], 2);
  }
  EXPECT_TRUE(stopped->creates.empty());
}

// A disruption taint on a member's node (a spot reclaim notice): the member leaves alive, like a scale-down's
// leaver -- not deleted under its feet, replaced at once -- and once it exited 0 its pod is deleted.
TEST(PlanJobTest, ADisruptionTaintOnItsNodeMakesAMemberLeaveAliveAndBeReplaced) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true, "n0"), Pod(1, "Running", true, "n1")};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  PlanInput in = Input(job, pods, kT0 + seconds(5));
  in.nodes["n1"].disruption_taint = "example.com/spot-notice:NoSchedule";
  auto plan = PlanJob(in);
  ASSERT_OK(plan) << plan.status();
  EXPECT_EQ((*plan->status)["membership"]["reason"], "Disrupted");
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 1);
  EXPECT_TRUE(plan->deletes.empty());
  EXPECT_EQ(Names(plan->creates), (std::vector<std::string>{"j-worker-2"}));
  ASSERT_EQ((*plan->status)["leaving"].size(), 1u) << plan->status->dump(2);
  EXPECT_EQ((*plan->status)["leaving"][0]["pod"], "j-worker-1");
  job = WithStatus(job, *plan);

  // Level-based: the same observation changes nothing more (the replacement is pending).
  pods.push_back(Pod(2, "Pending", false, "n0"));
  in = Input(job, pods, kT0 + seconds(6));
  in.nodes["n1"].disruption_taint = "example.com/spot-notice:NoSchedule";
  auto steady = PlanJob(in);
  ASSERT_OK(steady);
  EXPECT_TRUE(steady->creates.empty());
  EXPECT_TRUE(steady->deletes.empty());

  // It exited 0 after its last commit: its pod is deleted, nothing counted.
  pods[1] = Pod(1, "Succeeded", false, "n1");
  in = Input(job, pods, kT0 + seconds(7));
  in.nodes["n1"].disruption_taint = "example.com/spot-notice:NoSchedule";
  auto gone = PlanJob(in);
  ASSERT_OK(gone);
  ASSERT_EQ(gone->deletes.size(), 1u);
  EXPECT_EQ(gone->deletes[0].name, "j-worker-1");
  EXPECT_EQ(gone->status ? (*gone->status)["restartCount"].get<int>() : 0, 0);

  // A worker that never joined, on a tainted node, is deleted at once so its replacement can go elsewhere.
  std::vector<json> fresh = {Pod(0, "Running", true, "n0"), Pod(1, "Pending", false, "n1")};
  in = Input(Job(1, 2), fresh, kT0);
  in.nodes["n1"].disruption_taint = "example.com/spot-notice:NoSchedule";
  auto early = PlanJob(in);
  ASSERT_OK(early);
  ASSERT_EQ(early->deletes.size(), 1u);
  EXPECT_NE(early->deletes[0].why.find("disrupted before it joined"), std::string::npos) << early->deletes[0].why;
}

TEST(PlanJobTest, ScaleDownDeletesSurplusPodsThatNeverJoinedAtOnce) {
  json job = Job(1, 3);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  pods.push_back(Pod(2, "Pending", false));
  job["spec"]["replicas"]["desired"] = 2;
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(1)));
  ASSERT_OK(plan);
  ASSERT_EQ(plan->deletes.size(), 1u);
  EXPECT_EQ(plan->deletes[0].name, "j-worker-2");
  EXPECT_FALSE(plan->status && plan->status->contains("leaving"));
}

TEST(PlanJobTest, Rank0ExitingZeroCompletesTheJob) {
  json job = Job(2, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  pods[0] = Pod(0, "Succeeded", false);
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(60)));
  ASSERT_OK(plan);
  EXPECT_EQ((*plan->status)["phase"], "Succeeded");
  EXPECT_TRUE(plan->status->contains("completionTime"));
  // The still-running worker is most likely finishing too: it gets 10 s to exit by itself...
  auto settling = PlanJob(Input(WithStatus(job, *plan), pods, kT0 + seconds(61)));
  ASSERT_OK(settling);
  EXPECT_TRUE(settling->deletes.empty());
  ASSERT_TRUE(settling->requeue_at.has_value());
  EXPECT_EQ(*settling->requeue_at, kT0 + seconds(70));
  // ...then it is cleaned up (cleanPodPolicy Running).
  auto cleanup = PlanJob(Input(WithStatus(job, *plan), pods, kT0 + seconds(70)));
  ASSERT_OK(cleanup);
  ASSERT_EQ(cleanup->deletes.size(), 1u);
  EXPECT_EQ(cleanup->deletes[0].name, "j-worker-1");
}

TEST(PlanJobTest, MemberExitingZeroStaysBrieflySoTheEndCausesNoChurn) {
  json job = Job(2, 3);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  const int64_t generation = job["status"]["membership"]["generation"].get<int64_t>();
  // Rank 1 finished the training a moment before rank 0: no new generation, no deletion, no replacement.
  pods[1] = Pod(1, "Succeeded", false);
  pods[1]["status"]["containerStatuses"] = {
      {{"name", "t"},
       {"state",
        {{"terminated",
          {{"exitCode", 0}, {"reason", "Completed"}, {"finishedAt", FormatRfc3339(kT0 + seconds(30))}}}}}}};
  auto early = PlanJob(Input(job, pods, kT0 + seconds(31)));
  ASSERT_OK(early) << early.status();
  EXPECT_TRUE(early->deletes.empty());
  EXPECT_TRUE(early->creates.empty());
  EXPECT_FALSE(early->status && (*early->status)["membership"]["generation"] != generation) << early->status->dump(2);
  ASSERT_TRUE(early->requeue_at.has_value());
  EXPECT_EQ(*early->requeue_at, kT0 + seconds(40));
  // Then rank 0 exits 0: the job completes.
  std::vector<json> done = pods;
  done[0] = Pod(0, "Succeeded", false);
  auto completed = PlanJob(Input(job, done, kT0 + seconds(32)));
  ASSERT_OK(completed);
  EXPECT_EQ((*completed->status)["phase"], "Succeeded");
  // Had rank 0 gone on training, the finished worker leaves after the grace (and is replaced).
  auto late = PlanJob(Input(job, pods, kT0 + seconds(41)));
  ASSERT_OK(late);
  EXPECT_EQ((*late->status)["membership"]["generation"], generation + 1);
  EXPECT_EQ((*late->status)["membership"]["worldSize"], 2);
  ASSERT_EQ(late->deletes.size(), 1u);
  EXPECT_EQ(late->deletes[0].name, "j-worker-1");
  EXPECT_EQ((*late->status)["restartCount"], 0);
}

// A member's readiness lost while its container runs: kept for 15 s (a finishing worker's session is
// gone before its process is), so when it then exits 0 as rank 0 the job completes; one that stays
// NotReady past the grace is dropped.
TEST(PlanJobTest, MemberThatTurnsNotReadyIsKeptBrieflyThenDropped) {
  json job = Job(2, 3);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  const int64_t generation = job["status"]["membership"]["generation"].get<int64_t>();
  std::vector<json> not_ready = pods;
  for (int i : {0, 1}) {
    not_ready[i]["status"]["conditions"] = {
        {{"type", "Ready"}, {"status", "False"}, {"lastTransitionTime", FormatRfc3339(kT0 + seconds(30))}}};
  }
  auto graced = PlanJob(Input(job, not_ready, kT0 + seconds(33)));
  ASSERT_OK(graced) << graced.status();
  EXPECT_FALSE(graced->status && (*graced->status)["membership"]["generation"] != generation)
      << graced->status->dump(2);
  EXPECT_TRUE(graced->deletes.empty());
  ASSERT_TRUE(graced->requeue_at.has_value());
  EXPECT_EQ(*graced->requeue_at, kT0 + seconds(45));
  // Rank 0 exits 0 within the grace: the job is complete.
  std::vector<json> exited = not_ready;
  exited[0] = Pod(0, "Succeeded", false);
  auto completed = PlanJob(Input(job, exited, kT0 + seconds(44)));
  ASSERT_OK(completed);
  EXPECT_EQ((*completed->status)["phase"], "Succeeded");
  // Still NotReady when the grace is over: both leave the membership; rank 2 is rank 0 now.
  auto dropped = PlanJob(Input(job, not_ready, kT0 + seconds(45)));
  ASSERT_OK(dropped);
  EXPECT_EQ((*dropped->status)["membership"]["generation"], generation + 1);
  EXPECT_EQ((*dropped->status)["membership"]["worldSize"], 1);
  EXPECT_EQ((*dropped->status)["membership"]["members"][0]["pod"], "j-worker-2");
}

TEST(PlanJobTest, SuspendDeletesWorkersAndResumeRecreatesThem) {
  json job = Job(1, 2);
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  job["spec"]["runPolicy"] = {{"suspend", true}};
  auto plan = PlanJob(Input(job, pods));
  ASSERT_OK(plan);
  EXPECT_EQ(plan->deletes.size(), 2u);
  EXPECT_EQ((*plan->status)["phase"], "Suspended");
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 0);
  EXPECT_EQ((*plan->status)["membership"]["generation"], 2);
  job = WithStatus(job, *plan);
  job["spec"]["runPolicy"]["suspend"] = false;
  auto resumed = PlanJob(Input(job, {}, kT0 + seconds(5)));
  ASSERT_OK(resumed);
  EXPECT_EQ(resumed->creates.size(), 2u);
  EXPECT_EQ((*resumed->status)["phase"], "Pending");
}

TEST(PlanJobTest, TtlAfterFinishDeletesTheJob) {
  json job = Job(1, 1, {{"runPolicy", {{"ttlSecondsAfterFinished", 30}}}});
  job["status"] = {{"phase", "Succeeded"}, {"completionTime", FormatRfc3339(kT0)}};
  auto early = PlanJob(Input(job, {}, kT0 + seconds(10)));
  ASSERT_OK(early);
  EXPECT_FALSE(early->delete_job);
  EXPECT_EQ(*early->requeue_at, kT0 + seconds(30));
  auto late = PlanJob(Input(job, {}, kT0 + seconds(30)));
  ASSERT_OK(late);
  EXPECT_TRUE(late->delete_job);
}

// The active deadline counts from status.startTime: before it the job is looked at again when it
// falls due; at or after it the job fails with DeadlineExceeded.
TEST(PlanJobTest, ActiveDeadlineFailsTheJobWhenItFallsDue) {
  struct Case {
    int elapsed_s;
    bool fails;
  };
  for (const Case& c : {Case{10, false}, Case{60, true}, Case{90, true}}) {
    SCOPED_TRACE(c.elapsed_s);
    json job = Job(1, 1, {{"runPolicy", {{"activeDeadlineSeconds", 60}}}});
    job["status"] = {{"phase", "Running"}, {"startTime", FormatRfc3339(kT0)}};
    auto plan = PlanJob(Input(job, {}, kT0 + seconds(c.elapsed_s)));
    ASSERT_OK(plan);
    ASSERT_TRUE(plan->status.has_value());
    EXPECT_EQ((*plan->status)["phase"] == "Failed", c.fails);
    const bool event = std::any_of(plan->events.begin(), plan->events.end(),
                                   [](const JobEvent& e) { return e.reason == "DeadlineExceeded"; });
    EXPECT_EQ(event, c.fails);
    if (!c.fails) {
      ASSERT_TRUE(plan->requeue_at.has_value());
      EXPECT_LE(*plan->requeue_at, kT0 + seconds(60));
    }
  }
}

json ConditionOf(const json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return json::object();
}

std::vector<std::string> MemberPods(const json& status) {
  std::vector<std::string> out;
  for (const auto& m : status["membership"]["members"]) out.push_back(m["pod"]);
  return out;
}

// spec.replicas.multipleOf 2: three Ready workers make a world of 2 and a spare that says what it waits
// for; the fourth completes the group and both join.
TEST(PlanJobTest, MultipleOfPublishesWholeGroupsAndTheSpareWaitsForItsGroup) {
  json job = Job(2, 4, {{"replicas", {{"min", 2}, {"max", 4}, {"multipleOf", 2}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true),
                            Pod(3, "Pending", false)};
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(5)));  // the join window has passed
  ASSERT_OK(plan) << plan.status();
  ASSERT_TRUE(plan->status.has_value());
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 2) << plan->status->dump(2);
  EXPECT_EQ(MemberPods(*plan->status), (std::vector<std::string>{"j-worker-0", "j-worker-1"}));
  EXPECT_TRUE(plan->creates.empty());  // four workers exist: the spare is not surplus
  EXPECT_TRUE(plan->deletes.empty());
  const json running = ConditionOf(*plan->status, "Running");
  EXPECT_EQ(running.value("status", ""), "True");
  EXPECT_NE(running.value("message", "").find("1 Ready worker waiting for 1 more worker to complete a group of 2"),
            std::string::npos)
      << running.dump();
  job = WithStatus(job, *plan);

  // Nothing changes while the fourth is still starting: the plan is empty (level-based, idempotent).
  auto steady = PlanJob(Input(job, pods, kT0 + seconds(30)));
  ASSERT_OK(steady);
  EXPECT_TRUE(steady->empty()) << (steady->status ? steady->status->dump(2) : "");

  // The fourth becomes Ready: the group is complete and both join after the survivors.
  pods[3] = Pod(3, "Running", true, "n0", kT0 + seconds(30));
  auto grown = PlanJob(Input(job, pods, kT0 + seconds(31)));
  ASSERT_OK(grown);
  ASSERT_TRUE(grown->status.has_value());
  EXPECT_EQ((*grown->status)["membership"]["worldSize"], 4);
  EXPECT_EQ((*grown->status)["membership"]["reason"], "WorkerJoined");
  EXPECT_EQ(MemberPods(*grown->status),
            (std::vector<std::string>{"j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3"}));
  EXPECT_EQ(ConditionOf(*grown->status, "Running").value("message", ""), "4 workers in generation 2");
}

// A failure in a world of 4 in groups of 2 leaves 3: the world shrinks to 2, the highest-ranked survivor
// leaves like a scale-down (listed in status.leaving, not deleted under its feet), and both places are
// refilled after the backoff.
TEST(PlanJobTest, MultipleOfLossShrinksToTheLowerMultipleAndRefills) {
  json job =
      Job(2, 4, {{"replicas", {{"min", 2}, {"max", 4}, {"multipleOf", 2}}}, {"runPolicy", {{"keepFailedPods", 0}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true), Pod(2, "Running", true),
                            Pod(3, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  ASSERT_EQ(job["status"]["membership"]["worldSize"], 4);

  pods[1] = FailedPod(1, 137);
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan) << plan.status();
  const json& status = *plan->status;
  EXPECT_EQ(status["membership"]["reason"], "WorkerFailed");
  EXPECT_EQ(MemberPods(status), (std::vector<std::string>{"j-worker-0", "j-worker-2"}));
  EXPECT_EQ(status["membership"]["members"][1]["rank"], 1);
  ASSERT_EQ(status["leaving"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["leaving"][0]["pod"], "j-worker-3");
  ASSERT_EQ(plan->deletes.size(), 1u);  // only the failed one
  EXPECT_EQ(plan->deletes[0].name, "j-worker-1");
  EXPECT_TRUE(plan->creates.empty());  // replacement backoff
  job = WithStatus(job, *plan);

  // After the backoff: two new workers, at free indices (1 is free once the failed pod is gone, 3 is
  // still the leaving worker's).
  pods.erase(pods.begin() + 1);
  auto refill = PlanJob(Input(job, pods, kT0 + seconds(12)));
  ASSERT_OK(refill);
  EXPECT_EQ(Names(refill->creates), (std::vector<std::string>{"j-worker-1", "j-worker-4"}));
  // The leaving worker never joins again, though it is still Ready.
  EXPECT_FALSE(refill->status && refill->status->contains("membership") &&
               (*refill->status)["membership"]["generation"] != status["membership"]["generation"]);
}

// Below one group the world empties and the job waits for its gang minimum again.
TEST(PlanJobTest, MultipleOfLossOfAWholeGroupWaitsForTheMinimum) {
  json job = Job(2, 2, {{"replicas", {{"min", 2}, {"max", 2}, {"multipleOf", 2}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods)));
  pods[0] = FailedPod(0, 1);
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan);
  EXPECT_EQ((*plan->status)["membership"]["worldSize"], 0);
  EXPECT_EQ((*plan->status)["phase"], "Pending");
  const json running = ConditionOf(*plan->status, "Running");
  EXPECT_EQ(running.value("reason", ""), "WaitingForWorkers");
  EXPECT_NE(running.value("message", "").find("fewer Ready workers than one group of 2"), std::string::npos)
      << running.dump();
  ASSERT_EQ((*plan->status)["leaving"].size(), 1u);
  EXPECT_EQ((*plan->status)["leaving"][0]["pod"], "j-worker-1");
}

json WaitingPod(int index, const std::string& reason, const std::string& message) {
  json pod = Pod(index, "Pending", false);
  pod["status"]["containerStatuses"] = {
      {{"name", "t"}, {"state", {{"waiting", {{"reason", reason}, {"message", message}}}}}}};
  return pod;
}

// A worker whose image cannot be pulled keeps the job below what it needs: the Running condition names the
// pod and the kubelet's reason, so the user sees what to fix, before and after the job first ran.
TEST(PlanJobTest, AWorkerWhoseImageCannotBePulledIsNamedInTheRunningCondition) {
  json job = Job(2, 2);
  std::vector<json> pods = {Pod(0, "Running", true),
                            WaitingPod(1, "ImagePullBackOff", "Back-off pulling image \"r/w:nope\"")};
  auto plan = PlanJob(Input(job, pods, kT0 + seconds(10)));
  ASSERT_OK(plan);
  json running = ConditionOf(*plan->status, "Running");
  EXPECT_EQ(running.value("status", ""), "False");
  EXPECT_EQ(running.value("reason", ""), "WorkerCannotStart");
  EXPECT_NE(running.value("message", "")
                .find("worker pod j-worker-1: ImagePullBackOff: Back-off pulling image "
                      "\"r/w:nope\""),
            std::string::npos)
      << running.dump();

  // Once running at its minimum, a stuck extra worker does not hide that the job runs.
  json wide = Job(1, 2);
  job = WithStatus(wide, *PlanJob(Input(wide, {Pod(0, "Running", true)})));
  plan = PlanJob(Input(job, {Pod(0, "Running", true), WaitingPod(1, "ErrImagePull", "not found")}, kT0 + seconds(10)));
  ASSERT_OK(plan);
  running = ConditionOf(*plan->status, "Running");
  EXPECT_EQ(running.value("reason", ""), "WorkersRunning") << running.dump();

  // A container that is merely starting is not named.
  plan = PlanJob(Input(Job(2, 2), {WaitingPod(0, "ContainerCreating", ""), WaitingPod(1, "ContainerCreating", "")}));
  ASSERT_OK(plan);
  EXPECT_EQ(ConditionOf(*plan->status, "Running").value("reason", ""), "WaitingForWorkers");
}

// spec.scheduling.scheduleTimeoutSeconds: a job that cannot reach its minimum (here a worker whose image cannot
// be pulled, holding a GPU on its node) fails when the timeout has passed since its first reconcile, naming
// why it waited; once failed, its pods are deleted. Before the timeout it is looked at again when it falls due.
TEST(PlanJobTest, AJobBelowItsMinimumPastTheScheduleTimeoutFailsAndItsPodsAreDeleted) {
  json job = Job(2, 2, {{"scheduling", {{"scheduleTimeoutSeconds", 60}}}});
  std::vector<json> pods = {Pod(0, "Running", true), WaitingPod(1, "ErrImagePull", "manifest unknown")};
  auto first = PlanJob(Input(job, pods, kT0));
  ASSERT_OK(first);
  job = WithStatus(job, *first);

  auto early = PlanJob(Input(job, pods, kT0 + seconds(59)));
  ASSERT_OK(early);
  EXPECT_NE(early->status ? (*early->status)["phase"].get<std::string>() : "Pending", "Failed");
  ASSERT_TRUE(early->requeue_at.has_value());
  EXPECT_EQ(*early->requeue_at, kT0 + seconds(60));

  auto late = PlanJob(Input(job, pods, kT0 + seconds(60)));
  ASSERT_OK(late);
  ASSERT_TRUE(late->status.has_value());
  EXPECT_EQ((*late->status)["phase"], "Failed");
  json failed = ConditionOf(*late->status, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "ScheduleTimeout");
  EXPECT_NE(failed.value("message", "").find("spec.scheduling.scheduleTimeoutSeconds (60 s)"), std::string::npos)
      << failed.dump();
  EXPECT_NE(failed.value("message", "").find("worker pod j-worker-1: ErrImagePull: manifest unknown"),
            std::string::npos)
      << failed.dump();
  EXPECT_TRUE(late->creates.empty());

  // The next look at the failed job deletes both pods (cleanPodPolicy Running): no GPU stays held.
  auto cleanup = PlanJob(Input(WithStatus(job, *late), pods, kT0 + seconds(61)));
  ASSERT_OK(cleanup);
  std::vector<std::string> deleted;
  for (const auto& d : cleanup->deletes) deleted.push_back(d.name);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{"j-worker-0", "j-worker-1"}));
}

// The timeout counts only while the job is below its minimum: a job that ran at its minimum for longer than
// the timeout, then lost a worker, has the whole timeout again from the loss; one resumed after a long
// suspension counts from its resumption; one without the field waits as long as it takes.
TEST(PlanJobTest, TheScheduleTimeoutCountsFromTheDropBelowMinimumOrTheResumption) {
  json job = Job(2, 2, {{"scheduling", {{"scheduleTimeoutSeconds", 60}}}});
  std::vector<json> pods = {Pod(0, "Running", true), Pod(1, "Running", true)};
  job = WithStatus(job, *PlanJob(Input(job, pods, kT0)));
  auto steady = PlanJob(Input(job, pods, kT0 + seconds(600)));
  ASSERT_OK(steady);
  EXPECT_NE(steady->status ? (*steady->status)["phase"].get<std::string>() : "Running", "Failed");

  pods[1] = WaitingPod(1, "ErrImagePull", "manifest unknown");  // its replacement cannot start
  auto dropped = PlanJob(Input(job, pods, kT0 + seconds(700)));
  ASSERT_OK(dropped);
  job = WithStatus(job, *dropped);
  EXPECT_EQ(ConditionOf(job["status"], "Running").value("status", ""), "False");
  auto within = PlanJob(Input(job, pods, kT0 + seconds(759)));
  ASSERT_OK(within);
  EXPECT_NE(within->status ? (*within->status)["phase"].get<std::string>() : "Running", "Failed");
  auto past = PlanJob(Input(job, pods, kT0 + seconds(760)));
  ASSERT_OK(past);
  ASSERT_TRUE(past->status.has_value());
  EXPECT_EQ((*past->status)["phase"], "Failed");

  // Suspended for ten minutes, then resumed: the count starts at the resumption.
  json suspended = Job(2, 2, {{"scheduling", {{"scheduleTimeoutSeconds", 60}}}, {"runPolicy", {{"suspend", true}}}});
  suspended = WithStatus(suspended, *PlanJob(Input(suspended, {}, kT0)));
  suspended["spec"]["runPolicy"]["suspend"] = false;
  auto resumed = PlanJob(Input(suspended, {}, kT0 + seconds(600)));
  ASSERT_OK(resumed);
  EXPECT_EQ((*resumed->status)["phase"], "Pending");
  suspended = WithStatus(suspended, *resumed);
  auto after = PlanJob(Input(suspended, {}, kT0 + seconds(630)));
  ASSERT_OK(after);
  EXPECT_NE(after->status ? (*after->status)["phase"].get<std::string>() : "Pending", "Failed");
  auto past_resume = PlanJob(Input(suspended, {}, kT0 + seconds(660)));
  ASSERT_OK(past_resume);
  ASSERT_TRUE(past_resume->status.has_value());
  EXPECT_EQ((*past_resume->status)["phase"], "Failed");

  // No scheduleTimeoutSeconds: an hour below the minimum is still only waiting.
  json patient = Job(2, 2);
  patient = WithStatus(patient, *PlanJob(Input(patient, {}, kT0)));
  auto hour = PlanJob(Input(patient, {}, kT0 + std::chrono::hours(1)));
  ASSERT_OK(hour);
  EXPECT_NE(hour->status ? (*hour->status)["phase"].get<std::string>() : "Pending", "Failed");
}

TEST(PlanJobTest, MultipleOfThatDoesNotDivideTheBoundsIsInvalidAndDesiredIsRoundedDown) {
  json bad = Job(3, 4, {{"replicas", {{"min", 3}, {"max", 4}, {"multipleOf", 2}}}});
  auto refused = PlanJob(Input(bad, {}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("multiples of spec.replicas.multipleOf (2)"), std::string::npos)
      << refused.status();
  // A desired count written around the CRD's validation: 5 in groups of 2 aims for 4 workers.
  json job = Job(2, 6, {{"replicas", {{"min", 2}, {"max", 6}, {"desired", 5}, {"multipleOf", 2}}}});
  auto plan = PlanJob(Input(job, {}));
  ASSERT_OK(plan);
  EXPECT_EQ(plan->creates.size(), 4u);
  EXPECT_EQ((*plan->status)["replicas"]["desired"], 4);
}

// spec.ports: the coordinator is rank 0's address on the job's rendezvous port; ports whose per-process ranges
// overlap are refused.
TEST(PlanJobTest, TheCoordinatorIsOnTheJobsRendezvousPortAndOverlappingPortsAreRefused) {
  std::vector<json> pods = {Pod(0, "Running", true)};
  auto plan = PlanJob(Input(Job(1, 1, {{"ports", {{"rendezvous", 31000}}}}), pods));
  ASSERT_OK(plan) << plan.status();
  EXPECT_EQ((*plan->status)["membership"]["coordinator"], "127.64.0.1:31000");

  auto close = PlanJob(Input(Job(1, 1, {{"ports", {{"rendezvous", 31000}, {"metrics", 31010}}}}), pods));
  ASSERT_FALSE(close.ok());
  EXPECT_NE(close.status().message().find("at least 64 apart"), std::string::npos) << close.status();
  auto high = PlanJob(Input(Job(1, 1, {{"ports", {{"metrics", 65500}}}}), pods));
  EXPECT_EQ(high.status().code(), StatusCode::kInvalidArgument);
}

TEST(PlanJobTest, UnreadableSpecIsInvalidArgument) {
  json job = Job(1, 1);
  job["spec"]["replicas"]["min"] = "one";
  EXPECT_EQ(PlanJob(Input(job, {})).status().code(), StatusCode::kInvalidArgument);
}

// Neither an odd field of the job nor of a pod throws out of PlanJob: the job's is an error naming the
// object and the field, the pod's is read as absent.
TEST(PlanJobTest, FieldsOfTheWrongTypeNeverThrow) {
  json job = Job(1, 1);
  job["status"] = {{"restartCount", "many"}};
  auto bad = PlanJob(Input(job, {}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "TrainingJob ns/j: status.restartCount: expected integer, got string");
  job["status"] = {{"replicas", {{"desired", "2"}}}};
  EXPECT_EQ(PlanJob(Input(job, {})).status().code(), StatusCode::kInvalidArgument);

  json pod = FailedPod(0, 1);
  pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = "one";
  auto planned = PlanJob(Input(Job(1, 1), {pod}));
  ASSERT_OK(planned);
  ASSERT_TRUE(planned->status.has_value());
  EXPECT_EQ((*planned->status)["restartCount"], 1);
  EXPECT_EQ((*planned->status)["recentFailures"][0]["exitCode"], 0);
}

// spec.processesPerPod defaults to the worker container's GPU limit: a 2-GPU template runs two ranks per
// pod, its pods start under the launcher, and the first generation of 2 pods is a world of 4 ranks whose
// status names both counts. A count the GPUs cannot hold, or one that makes half groups, is refused.
TEST(PlanJobTest, ProcessesPerPodDefaultToTheGpuLimitAndTheWorldCountsRanks) {
  json gpu_template = {{"spec",
                        {{"containers",
                          {{{"name", "t"},
                            {"image", "i"},
                            {"command", {"python", "train.py"}},
                            {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}}};
  json job = Job(2, 2, {{"template", gpu_template}});
  auto spec = ParseJobSpec(*api::DecodeTrainingJobSpec(job["spec"]));
  ASSERT_OK(spec) << spec.status();
  EXPECT_EQ(spec->processes_per_pod, 2);
  EXPECT_EQ(spec->gpus_per_pod, 2);

  auto first = PlanJob(Input(job, {}));
  ASSERT_OK(first) << first.status();
  ASSERT_EQ(first->creates.size(), 2u);
  EXPECT_EQ(first->creates[0]["spec"]["containers"][0]["command"][0], kLaunchCommand);
  job = WithStatus(job, *first);
  auto started = PlanJob(Input(job, {Pod(0, "Running", true), Pod(1, "Running", true)}, kT0 + seconds(1)));
  ASSERT_OK(started) << started.status();
  const json& membership = (*started->status)["membership"];
  EXPECT_EQ(membership["worldSize"], 4);
  EXPECT_EQ(membership["pods"], 2);
  EXPECT_EQ(membership["members"][3]["pod"], "j-worker-1");
  EXPECT_EQ(membership["members"][3]["process"], 1);
  EXPECT_NE(ConditionOf(*started->status, "Running").value("message", "").find("2 workers in generation 1 (4 ranks)"),
            std::string::npos)
      << started->status->dump();

  json too_many = Job(2, 2, {{"template", gpu_template}, {"processesPerPod", 3}});
  auto refused = ParseJobSpec(*api::DecodeTrainingJobSpec(too_many["spec"]));
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("exceeds the worker container's nvidia.com/gpu limit (2)"),
            std::string::npos)
      << refused.status();
  json halves = Job(1, 3, {{"processesPerPod", 1}});
  halves["spec"]["replicas"]["multipleOf"] = 2;
  EXPECT_EQ(ParseJobSpec(*api::DecodeTrainingJobSpec(halves["spec"])).status().code(), StatusCode::kInvalidArgument);
  json whole = Job(1, 3, {{"processesPerPod", 2}});
  whole["spec"]["replicas"]["multipleOf"] = 2;
  EXPECT_OK(ParseJobSpec(*api::DecodeTrainingJobSpec(whole["spec"]))) << "1 to 3 pods of 2 ranks are whole groups of 2";
}

}  // namespace
}  // namespace ringmaster::controller
