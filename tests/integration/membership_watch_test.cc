// A worker's view of membership: KubernetesMembershipSource watching its own TrainingJob with only the
// worker's service-account token (the RBAC the operator creates), against the real apiserver — first
// with records written by hand, then with the operator publishing them.
#include <gtest/gtest.h>

#include <string>

#include "api/hang_report.h"
#include "api/peer_report.h"
#include "base/status_test_macros.h"
#include "kube/client.h"
#include "kube/config.h"
#include "operator/controller/worker_objects.h"
#include "tests/support/background_process.h"
#include "tests/support/cluster_test.h"
#include "tests/support/manifests.h"
#include "worker-runtime/membership/kubernetes_source.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
namespace kube = ringmaster::kube;
namespace ms = ringmaster::membership;

const std::string kPort = std::to_string(api::kCoordinatorPort);

class MembershipWatchTest : public JobTest {
 protected:
  MembershipWatchTest() : JobTest("members") {}

  json CreateJob(const std::string& name, int min, int max) {
    return ApplyJob(name, "  replicas: {min: " + std::to_string(min) + ", max: " + std::to_string(max) +
                              "}\n  elasticPolicy: {joinBatchWindowSeconds: 1}\n");
  }

  // A client that authenticates only as the job's worker service account.
  std::shared_ptr<kube::Client> WorkerClient(const json& job) {
    for (auto object : {controller::BuildWorkerServiceAccount(job), controller::BuildWorkerRole(job),
                        controller::BuildWorkerRoleBinding(job)}) {
      EXPECT_OK(object) << object.status();
      EXPECT_OK(cluster_.Apply(object->dump()));
    }
    auto token = cluster_.Kubectl({"create", "token", controller::WorkerServiceAccountFor(job), "-n", ns_});
    EXPECT_COMMAND_OK(token);
    kube::ClientConfig config;
    config.server = cluster_.server();
    auto ca = kube::ReadFileToString(cluster_.ca_file());
    EXPECT_OK(ca);
    config.ca_pem = *ca;
    config.bearer_token = token->out.substr(0, token->out.find('\n'));
    config.namespace_name = ns_;
    auto client = kube::NewClient(config);
    EXPECT_OK(client) << client.status();
    return *client;
  }

  void PatchMembership(const std::string& job, const std::string& membership) {
    auto r = cluster_.Kubectl({"patch", "tj", job, "-n", ns_, "--subresource=status", "--type=merge", "-p",
                               R"({"status":{"membership":)" + membership + "}}"});
    ASSERT_COMMAND_OK(r) << (r.ok() ? r->err : r.status().ToString());
  }
};

TEST_F(MembershipWatchTest, WorkerTokenWatchesItsOwnJobsMembership) {
  json job = CreateJob("mine", 1, 2);
  auto source = ms::KubernetesMembershipSource::Start(WorkerClient(job), {ns_, "mine", "mine-worker-1"});
  ASSERT_OK(source) << source.status();
  EXPECT_EQ((*source)->WaitNewer(0, milliseconds(1500)).status().code(), StatusCode::kDeadlineExceeded);

  PatchMembership("mine", R"({"generation":1,"worldSize":2,"coordinator":"127.0.0.9:)" + kPort + R"(","members":[
      {"pod":"mine-worker-0","uid":"a","rank":0,"address":"127.0.0.9","node":"n0"},
      {"pod":"mine-worker-1","uid":"b","rank":1,"address":"127.0.0.10","node":"n1"}]})");
  auto first = (*source)->WaitNewer(0, seconds(20));
  ASSERT_OK(first) << first.status();
  EXPECT_EQ(first->generation, 1);
  EXPECT_EQ(first->world_size(), 2);
  EXPECT_EQ(first->coordinator, "127.0.0.9:" + kPort);
  EXPECT_EQ(first->members[1].pod, "mine-worker-1");

  // A malformed record (ranks with a gap) is skipped; the last good one stays.
  PatchMembership("mine", R"({"generation":2,"worldSize":1,"members":[{"pod":"x","rank":3}]})");
  EXPECT_EQ((*source)->WaitNewer(1, milliseconds(1500)).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*source)->Latest().generation, 1);

  PatchMembership("mine", R"({"generation":3,"worldSize":1,"coordinator":"127.0.0.10:)" + kPort + R"(","members":[
      {"pod":"mine-worker-1","uid":"b","rank":0,"address":"127.0.0.10","node":"n1"}]})");
  auto third = (*source)->WaitNewer(1, seconds(20));
  ASSERT_OK(third) << third.status();
  EXPECT_EQ(third->generation, 3);
  EXPECT_EQ(third->members[0].pod, "mine-worker-1");

  // Peer reports: with its token alone the worker replaces its own entry in the job's ConfigMap, which
  // the operator created (here: the test); another entry there stays.
  auto reports = controller::BuildPeerReports(job);
  ASSERT_OK(reports);
  (*reports)["data"]["mine-worker-0"] = api::EncodePeerReport({"mine-worker-0", 1, {}, ""});
  ASSERT_OK(cluster_.Apply(reports->dump()));
  ASSERT_OK((*source)->ReportUnreachable(1, {"mine-worker-0"}));
  ASSERT_OK((*source)->ReportUnreachable(3, {"someone-else"}));
  auto cm = cluster_.KubectlJson({"get", "configmap", api::PeerReportsName("mine"), "-n", ns_});
  ASSERT_OK(cm) << cm.status();
  auto mine = api::DecodePeerReport("mine-worker-1", (*cm)["data"].value("mine-worker-1", ""));
  ASSERT_OK(mine) << mine.status() << "\n" << cm->dump(2);
  EXPECT_EQ(mine->generation, 3);
  EXPECT_EQ(mine->unreachable, std::vector<std::string>{"someone-else"});
  EXPECT_TRUE((*cm)["data"].contains("mine-worker-0"));

  // A hang report goes to the same ConfigMap under "_hung.<pod>" (api/hang_report.h), with the same token; the
  // peer report beside it stays.
  const api::HangReport hang{"mine-worker-1", 3, 31.5, 0.25, 40, "2026-12-06T10:00:00.000Z"};
  ASSERT_OK((*source)->ReportHang(hang));
  cm = cluster_.KubectlJson({"get", "configmap", api::PeerReportsName("mine"), "-n", ns_});
  ASSERT_OK(cm) << cm.status();
  auto hung = api::DecodeHangReport("mine-worker-1", (*cm)["data"].value(api::HangReportKey("mine-worker-1"), ""));
  ASSERT_OK(hung) << hung.status() << "\n" << cm->dump(2);
  EXPECT_EQ(*hung, hang);
  EXPECT_TRUE((*cm)["data"].contains("mine-worker-1"));

  // Stop wakes a waiter with Cancelled.
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    (*source)->Stop();
  });
  EXPECT_EQ((*source)->WaitNewer(3, seconds(20)).status().code(), StatusCode::kCancelled);
  stopper.join();
}

TEST_F(MembershipWatchTest, WorkerSeesEachGenerationTheOperatorPublishes) {
  BackgroundProcess op;
  ASSERT_OK(op.Start({RINGMASTER_OPERATOR_BIN, "--kubeconfig", cluster_.kubeconfig(), "--namespace", ns_,
                      "--metrics-bind-address", "0", "--health-probe-bind-address", "0"},
                     ::testing::TempDir() + ns_ + "-operator.log"));
  json job = CreateJob("watched", 2, 3);
  auto source = ms::KubernetesMembershipSource::Start(WorkerClient(job), {ns_, "watched", ""});
  ASSERT_OK(source) << source.status();
  auto started = (*source)->WaitNewer(0, seconds(60));
  ASSERT_OK(started) << started.status() << "\n" << op.Log();
  EXPECT_GE(started->world_size(), 2);
  EXPECT_EQ(started->coordinator, started->members[0].address + ":" + kPort);

  // A member reports its generation hung (api/hang_report.h): the operator publishes the next one, reason Hung, with
  // the same members, and counts it once (status.hangs, a Warning Event Hung). A report about a generation that a
  // join replaced meanwhile is stale: it is made again about the newest.
  api::Membership hung;
  Status rebuilt = WaitFor("a Hung generation", seconds(60), [&](std::string* last) {
    const api::Membership latest = (*source)->Latest();
    if (latest.reason == "Hung") {
      hung = latest;
      return true;
    }
    EXPECT_OK((*source)->ReportHang({latest.members[0].pod, latest.generation, 31, 0.2, 10, ""}));
    *last = "generation " + std::to_string(latest.generation) + " (" + latest.reason + ")";
    (void)(*source)->WaitNewer(latest.generation, seconds(2));
    return false;
  });
  ASSERT_OK(rebuilt) << rebuilt << "\n" << op.Log();
  Status counted = WaitFor("status.hangs 1", seconds(30), [&](std::string* last) {
    auto tj = cluster_.KubectlJson({"get", "tj", "watched", "-n", ns_});
    if (!tj.ok()) return false;
    *last = (*tj)["status"].dump();
    return (*tj)["status"].value("hangs", 0) == 1 &&
           (*tj)["status"]["membership"].value("generation", int64_t{0}) >= hung.generation;
  });
  EXPECT_OK(counted) << counted;
  Status told = WaitFor("a Hung Event", seconds(30), [&](std::string* last) {
    auto events = cluster_.KubectlJson({"get", "events", "-n", ns_, "--field-selector", "reason=Hung"});
    if (!events.ok()) return false;
    *last = events->dump();
    return !(*events)["items"].empty() && (*events)["items"][0].value("type", "") == "Warning";
  });
  EXPECT_OK(told) << told;

  // A worker fails: the source delivers the operator's next generation, without that worker.
  api::Membership now = (*source)->Latest();
  std::string victim = now.members.back().pod;
  auto l =
      cluster_.Kubectl({"label", "pod", victim, "-n", ns_, "pod-container-running-failed.stage.kwok.x-k8s.io=true"});
  ASSERT_COMMAND_OK(l);
  Status dropped = WaitFor("a generation without " + victim, seconds(60), [&](std::string* last) {
    auto next = (*source)->WaitNewer(now.generation, seconds(1));
    if (!next.ok()) return false;
    now = *next;
    *last = "generation " + std::to_string(now.generation);
    const api::Member* m = now.Find(victim);
    return m == nullptr;
  });
  EXPECT_OK(dropped) << dropped << "\n" << op.Log();
  op.Stop();
}

}  // namespace
}  // namespace ringmaster::testing
