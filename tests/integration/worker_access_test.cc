// The objects the operator creates for a job, applied to the real apiserver: the worker pod is accepted,
// scheduled by its GPU limit and runs with its identity in its environment; the worker's service-account
// token can read and watch its own TrainingJob and is refused (403) on another job.
#include <gtest/gtest.h>

#include <string>

#include "api/peer_report.h"
#include "base/status_test_macros.h"
#include "operator/controller/worker_objects.h"
#include "tests/support/cluster_test.h"
#include "tests/support/manifests.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

class WorkerAccessTest : public JobTest {
 protected:
  WorkerAccessTest() : JobTest("access") {}

  // Creates a TrainingJob and returns it as stored (with its uid).
  json CreateJob(const std::string& name) { return ApplyJob(name, "  replicas: {min: 1, max: 2}\n"); }

  void ApplyJson(const StatusOr<json>& object) {
    ASSERT_OK(object) << object.status();
    auto r = cluster_.Kubectl({"apply", "-f", "-"}, object->dump());
    ASSERT_COMMAND_OK(r) << (r.ok() ? r->err : r.status().ToString()) << "\n" << object->dump(2);
  }

  // GET `path` (or a JSON merge patch of `patch` to it) with a bearer token; returns the HTTP status code.
  std::string HttpCode(const std::string& token, const std::string& path, const std::string& patch = "") {
    std::vector<std::string> argv = {
        "curl",       "-sS", "-o",       "/dev/null",        "-w", "%{http_code}",
        "--max-time", "10",  "--cacert", cluster_.ca_file(), "-H", "Authorization: Bearer " + token};
    if (!patch.empty())
      argv.insert(argv.end(), {"-X", "PATCH", "-H", "Content-Type: application/merge-patch+json", "-d", patch});
    argv.push_back(cluster_.server() + path);
    auto r = RunCommand(argv, seconds(20));
    EXPECT_OK(r) << r.status();
    return r.ok() ? r->out : "";
  }

  json beta_;  // the second job, as stored
};

TEST_F(WorkerAccessTest, WorkerTokenReadsItsOwnJobAndIsRefusedOnAnother) {
  json alpha = CreateJob("alpha");
  beta_ = CreateJob("beta");
  ApplyJson(controller::BuildWorkerServiceAccount(alpha));
  ApplyJson(controller::BuildWorkerRole(alpha));
  ApplyJson(controller::BuildWorkerRoleBinding(alpha));
  auto token = cluster_.Kubectl({"create", "token", controller::WorkerServiceAccountFor(alpha), "-n", ns_});
  ASSERT_COMMAND_OK(token) << (token.ok() ? token->err : token.status().ToString());
  std::string t = token->out.substr(0, token->out.find('\n'));

  const std::string jobs =
      "/apis/" + std::string(api::kApiVersion) + "/namespaces/" + ns_ + "/" + std::string(api::kResource);
  EXPECT_EQ(HttpCode(t, jobs + "/alpha"), "200");
  // The watch the runtime uses: its own job, by name.
  EXPECT_EQ(HttpCode(t, jobs + "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dalpha"), "200");
  EXPECT_EQ(HttpCode(t, jobs + "/beta"), "403");
  EXPECT_EQ(HttpCode(t, jobs), "403");  // listing every job is not allowed
  EXPECT_EQ(HttpCode(t, "/api/v1/namespaces/" + ns_ + "/pods"), "403");
  // Its job's secret reaches it as a mounted file, never through the API: no Secret can be read.
  EXPECT_EQ(HttpCode(t, "/api/v1/namespaces/" + ns_ + "/secrets"), "403");
  EXPECT_EQ(HttpCode(t, "/api/v1/namespaces/" + ns_ + "/secrets/" + controller::WorkerSecretName("alpha")), "403");

  // Peer reports (api/peer_report.h): its own job's ConfigMap may be read and patched; no other one.
  ApplyJson(controller::BuildPeerReports(alpha));
  ApplyJson(controller::BuildPeerReports(beta_));
  const std::string configmaps = "/api/v1/namespaces/" + ns_ + "/configmaps";
  const std::string report = R"({"data":{"alpha-worker-0":"{\"generation\":1,\"unreachable\":[\"alpha-worker-1\"]}"}})";
  EXPECT_EQ(HttpCode(t, configmaps + "/" + api::PeerReportsName("alpha")), "200");
  EXPECT_EQ(HttpCode(t, configmaps + "/" + api::PeerReportsName("alpha"), report), "200");
  EXPECT_EQ(HttpCode(t, configmaps + "/" + api::PeerReportsName("beta")), "403");
  EXPECT_EQ(HttpCode(t, configmaps + "/" + api::PeerReportsName("beta"), report), "403");
  EXPECT_EQ(HttpCode(t, configmaps), "403");  // no listing
}

TEST_F(WorkerAccessTest, WorkerPodIsAcceptedScheduledByGpuAndRuns) {
  json job = CreateJob("gamma");
  ApplyJson(controller::BuildWorkerServiceAccount(job));
  ApplyJson(controller::BuildHeadlessService(job));
  ApplyJson(controller::BuildWorkerPod(job, 0, 1));
  json pod;
  Status running = WaitFor("gamma-worker-0 Running", seconds(60), [&](std::string* last) {
    auto p = cluster_.KubectlJson({"get", "pod", "gamma-worker-0", "-n", ns_});
    if (!p.ok()) {
      *last = p.status().ToString();
      return false;
    }
    pod = *p;
    *last = pod["status"].dump();
    return pod["status"].value("phase", "") == "Running";
  });
  ASSERT_OK(running) << running;
  EXPECT_FALSE(pod["spec"].value("nodeName", "").empty());
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "gamma-worker");
  // Deleting the job garbage-collects its pod through the owner reference (the controller-manager's GC).
  auto del = cluster_.Kubectl({"delete", "tj", "gamma", "-n", ns_, "--wait=false"});
  ASSERT_COMMAND_OK(del);
  Status collected = WaitFor("gamma-worker-0 garbage-collected", seconds(60), [&](std::string* last) {
    auto p = cluster_.Kubectl({"get", "pod", "gamma-worker-0", "-n", ns_});
    if (p.ok()) *last = p->out + p->err;
    return p.ok() && p->exit_code != 0 && p->err.find("NotFound") != std::string::npos;
  });
  EXPECT_OK(collected) << collected;
}

}  // namespace
}  // namespace ringmaster::testing
