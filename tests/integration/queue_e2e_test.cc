// Kueue (the test cluster runs it: cluster.sh up --kueue) admitting, preempting and readmitting a TrainingJob that
// the operator queues through Kueue's external-framework route (operator/controller/queue_admission.h):
//   - a job that does not fit its ClusterQueue's quota waits suspended, its Workload pending, no pod created;
//   - freeing quota admits it; its pods land where the admitted ResourceFlavor says (the template has no placement
//     of its own: the flavour's node label and toleration put the workers on the real nodes);
//   - a job of a higher WorkloadPriorityClass preempts it: its workers commit at a step boundary, rank 0 saves
//     that commit, and they exit 0; once they are gone the operator gives the quota back, and the job resumes
//     from that commit when Kueue admits it again (partially, beside the preemptor, or whole after it) -- no step
//     lost, the exact weights, every sample once.
// Figures: queued -> running after quota frees; steps lost at the preemption.
#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

class QueueE2eTest : public ElasticWorkersE2eTest {
 protected:
  void SetUp() override {
    ElasticWorkersE2eTest::SetUp();
    if (HasFatalFailure()) return;
    placement_.clear();  // the admitted flavour places the workers
    flavor_ = "rf-" + ns_;
    queue_ = "cq-" + ns_;
    low_ = "low-" + ns_;
    high_ = "high-" + ns_;
  }

  void TearDown() override {
    ElasticWorkersE2eTest::TearDown();
    for (const auto& [kind, name] :
         std::vector<std::pair<std::string, std::string>>{{"clusterqueue", queue_},
                                                          {"resourceflavor", flavor_},
                                                          {"workloadpriorityclass", low_},
                                                          {"workloadpriorityclass", high_}}) {
      if (!name.empty()) (void)cluster_.Kubectl({"delete", kind, name, "--ignore-not-found", "--wait=false"});
    }
  }

  // The flavour of the real nodes, a ClusterQueue of `gpus` nvidia.com/gpu for this test's namespace that preempts
  // lower priorities, the namespace's LocalQueue "team", and two WorkloadPriorityClasses.
  void ApplyQueue(int gpus) {
    const std::string key = "ringmaster.io/real-node";
    Status s = cluster_.Apply(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " + flavor_ +
        "}\nspec:\n  nodeLabels: {" + key + ": \"true\"}\n  tolerations: [{key: " + key +
        ", operator: Exists, effect: NoSchedule}]\n"
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " +
        queue_ + "}\nspec:\n  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: " + ns_ +
        "}}\n  preemption: {withinClusterQueue: LowerPriority}\n  resourceGroups:\n  - coveredResources: "
        "[nvidia.com/gpu]\n    flavors:\n    - name: " +
        flavor_ + "\n      resources: [{name: nvidia.com/gpu, nominalQuota: " + std::to_string(gpus) +
        "}]\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: team, namespace: " + ns_ +
        "}\nspec: {clusterQueue: " + queue_ +
        "}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: " + low_ +
        "}\nvalue: 100\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: " +
        high_ + "}\nvalue: 1000\n");
    ASSERT_OK(s) << s;
  }

  void SetQuota(int gpus) {
    auto patched = cluster_.Kubectl({"patch", "clusterqueue", queue_, "--type=json", "-p",
                                     "[{\"op\": \"replace\", \"path\": "
                                     "\"/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota\", \"value\": " +
                                         std::to_string(gpus) + "}]"});
    ASSERT_COMMAND_OK(patched) << (patched.ok() ? patched->err : "");
  }

  // The job's Workload (the one Workload in the namespace owned by a TrainingJob named `job`).
  json WorkloadOf(const std::string& job) {
    auto list = cluster_.KubectlJson(
        {"get", "workloads.kueue.x-k8s.io", "-n", ns_, "-l", std::string(api::kJobNameLabel) + "=" + job});
    if (!list.ok() || !list->contains("items") || (*list)["items"].empty()) return json::object();
    return (*list)["items"][0];
  }
  static std::string ConditionOf(const json& obj, const std::string& type) {
    for (const auto& c : obj.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == type)
        return c.value("status", "") + " " + c.value("reason", "") + ": " + c.value("message", "");
    return "";
  }
  static std::string SuspendedReason(const json& job) {
    for (const auto& c : job.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Suspended" && c.value("status", "") == "True") return c.value("reason", "");
    return "";
  }

  // Every line of the workers' journals (sample_journal.h) as (kind, incarnation, step).
  void ForEachJournalLine(const std::function<void(const std::string&, int64_t, int64_t)>& fn) {
    for (const auto& e : std::filesystem::directory_iterator(out_ + "/train")) {
      if (e.path().filename().string().rfind("journal.", 0) != 0) continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        std::istringstream f(line);
        std::string kind;
        int64_t incarnation = 0, step = -1;
        if (f >> kind >> incarnation >> step) fn(kind, incarnation, step);
      }
    }
  }
  // The highest step attempted by an incarnation at most `upto`, and the step the first incarnation after `upto`
  // resumed at (-1 when none).
  std::pair<int64_t, int64_t> JournalEdges(int64_t upto) {
    int64_t attempted = -1, resumed = -1, resumed_incarnation = std::numeric_limits<int64_t>::max();
    ForEachJournalLine([&](const std::string& kind, int64_t incarnation, int64_t step) {
      if (kind == "A" && incarnation <= upto) attempted = std::max(attempted, step);
      if (kind == "R" && incarnation > upto && incarnation < resumed_incarnation) {
        resumed_incarnation = incarnation;
        resumed = step;
      }
    });
    return {attempted, resumed};
  }
  int64_t HighestIncarnation() {
    int64_t best = -1;
    ForEachJournalLine([&](const std::string&, int64_t incarnation, int64_t) { best = std::max(best, incarnation); });
    return best;
  }

  std::string flavor_, queue_, low_, high_;
};

TEST_F(QueueE2eTest, AQueuedJobWaitsForQuotaIsPreemptedAtAStepBoundaryAndResumesFromThatCommit) {
  ASSERT_NO_FATAL_FAILURE(ApplyQueue(0));  // no quota yet: the job cannot fit
  // The final commit of a preempted job is what it resumes from: periodic checkpoints are too rare to help.
  workload_.args.insert(workload_.args.end(),
                        {"--checkpoint-dir", WorkersOut() + "/ckpt", "--checkpoint-every", "1000"});
  labels_ = "kueue.x-k8s.io/queue-name: team, kueue.x-k8s.io/priority-class: " + low_;
  ASSERT_NO_FATAL_FAILURE(ApplyJob());

  // Queued: suspended with Kueue's reason, its Workload pending, no pod.
  json queued = WaitForJob("the job to wait in the queue", seconds(30), [&](const json& j) {
    return Phase(j) == "Suspended" && SuspendedReason(j) == "Queued" && !WorkloadOf(kJob).empty();
  });
  json wl = WorkloadOf(kJob);
  EXPECT_EQ(wl["spec"]["podSets"][0].value("count", 0), workload_.workers) << wl.dump();
  EXPECT_EQ(wl["spec"]["podSets"][0].value("minCount", 0), min_workers_) << wl.dump();
  EXPECT_EQ(wl["spec"].value("priority", 0), 100) << wl.dump();
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0].value("name", ""), kJob);
  Status pending = WaitFor("Kueue to find no quota", seconds(30), [&](std::string* last) {
    *last = ConditionOf(WorkloadOf(kJob), "QuotaReserved");
    return last->rfind("False", 0) == 0;
  });
  EXPECT_OK(pending) << pending;
  EXPECT_TRUE(pods_->Pods().empty()) << "a queued job created pods";

  // Quota frees: admitted, its workers on the flavour's nodes, training.
  const auto freed = std::chrono::steady_clock::now();
  auto since_freed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - freed).count(); };
  ASSERT_NO_FATAL_FAILURE(SetQuota(4));
  Status admitted = WaitFor("Kueue to admit the job", seconds(30), [&](std::string* last) {
    *last = ConditionOf(WorkloadOf(kJob), "Admitted");
    return last->rfind("True", 0) == 0;
  });
  ASSERT_OK(admitted) << admitted;
  std::printf("FIGURE queued_to_admitted_s %.2f (quota freed -> Workload Admitted)\n", since_freed());
  WaitForJob("the first membership", seconds(60),
             [&](const json& j) { return Membership(j).value("worldSize", 0) > 0; });
  std::printf("FIGURE queued_to_first_membership_s %.2f (quota freed -> workers Ready, generation published)\n",
              since_freed());
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const int64_t generation = m.value("generation", int64_t{0});
  for (const auto& member : m["members"]) {
    auto node = cluster_.Kubectl({"get", "pod", member.value("pod", ""), "-n", ns_, "-o", "jsonpath={.spec.nodeName}"});
    ASSERT_COMMAND_OK(node);
    EXPECT_EQ(node->out.rfind("ringmaster-node-", 0), 0u) << member.value("pod", "") << " is on " << node->out;
  }

  // A higher priority needs 2 of the 4 GPUs: Kueue preempts the job, which leaves at a step boundary.
  std::string urgent =
      "apiVersion: ringmaster.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: urgent\n  namespace: " + ns_ +
      "\n  labels: {kueue.x-k8s.io/queue-name: team, kueue.x-k8s.io/priority-class: " + high_ +
      "}\nspec:\n  replicas: {min: 2, max: 2}\n  template:\n    spec:\n      containers:\n      - name: "
      "trainer\n        image: " +
      image_ + "\n        command: [sleep, \"600\"]\n        resources: {limits: {nvidia.com/gpu: 1}}\n";
  ASSERT_OK(cluster_.Apply(urgent));
  std::vector<std::string> members;
  for (const auto& member : m["members"]) members.push_back(member.value("pod", ""));
  json evicted = WaitForJob("the job to be preempted", seconds(60),
                            [&](const json& j) { return SuspendedReason(j) == "Evicted"; });
  EXPECT_NE(ConditionOf(WorkloadOf(kJob), "Evicted").find("Preempted"), std::string::npos);
  for (const auto& pod : members) EXPECT_EQ(WaitForExit(pod, seconds(40)), 0) << pod << " did not leave alive";
  const int64_t last_incarnation = HighestIncarnation();

  // The preemptor runs; the job comes back (beside it with 2 workers, or whole after it) from its final commit.
  Status urgent_admitted = WaitFor("the preemptor to be admitted", seconds(60), [&](std::string* last) {
    *last = ConditionOf(WorkloadOf("urgent"), "Admitted");
    return last->rfind("True", 0) == 0;
  });
  EXPECT_OK(urgent_admitted) << urgent_admitted;
  Status back = WaitFor("the job to train again", seconds(90), [&](std::string* last) {
    json j = Job();
    *last = j.value("status", json::object()).dump();
    if (Phase(j) == "Suspended" && ConditionOf(WorkloadOf(kJob), "QuotaReserved").rfind("False", 0) == 0)
      (void)cluster_.Kubectl({"delete", "tj", "urgent", "-n", ns_, "--ignore-not-found", "--wait=false"});
    return Membership(j).value("generation", int64_t{0}) > generation + 1 && Membership(j).value("worldSize", 0) >= 2;
  });
  ASSERT_OK(back) << back;
  const json again = Membership(Job());
  std::printf(
      "resumed in generation %lld with %d workers, %s\n", static_cast<long long>(again.value("generation", 0)),
      again.value("worldSize", 0),
      WorkloadOf("urgent").empty() ? "after the preemptor was deleted" : "beside the preemptor (partial admission)");
  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  (void)finishers;

  const auto [attempted, resumed] = JournalEdges(last_incarnation);
  ASSERT_GE(attempted, 0);
  ASSERT_GE(resumed, 0) << "no resumption after the preemption in the journals";
  std::printf("FIGURE preemption_steps_lost %lld (left after step %lld, resumed at %lld)\n",
              static_cast<long long>(attempted + 1 - resumed), static_cast<long long>(attempted + 1),
              static_cast<long long>(resumed));
  EXPECT_EQ(resumed, attempted + 1) << "the job did not resume from the commit it was preempted at";
  EXPECT_EQ(Job()["status"].value("restartCount", -1), 0) << "a preemption was counted as a failure";
  // Finished: the Workload says so, which gave its quota back.
  Status finished = WaitFor("the Workload to be Finished", seconds(30), [&](std::string* last) {
    *last = ConditionOf(WorkloadOf(kJob), "Finished");
    return last->rfind("True", 0) == 0;
  });
  EXPECT_OK(finished) << finished;
}

}  // namespace
}  // namespace ringmaster::testing
