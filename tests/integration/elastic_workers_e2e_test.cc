// Real workers under the real operator: ringmaster-operator as its own process manages a TrainingJob on
// the local control plane; KWOK runs its pods on fake GPU nodes of this test's own pool, and the pod
// runner (pod_runner/pod_runner.h) runs each Running pod's container -- ringmaster-train-example -- as a
// local process on the pod's loopback IP, with the pod's environment (the job secret from its Secret)
// and its service-account token. The workers learn their membership by watching their TrainingJob,
// rendezvous, train over Gloo and rebuild in place when the operator publishes a new generation.
//
// The PyTorch tests run the same way with the ringmaster Python package's digits examples (Horovod's
// elastic API, DDP, FSDP2 on a DeviceMesh) as the container's command.
//
// Each test disturbs the job mid-run (a worker SIGKILLed, a node lost, a scale-down) and then requires:
// the job Succeeded, every finisher's weights equal a one-process run (float64, 1e-9 relative), and
// the committed samples (ResolveJournals over every worker's journal) cover each epoch exactly once.
#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

TEST_F(ElasticWorkersE2eTest, KilledWorkerIsReplacedAndTheJobFinishesExactly) {
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const std::string victim = m["members"][1].value("pod", "");
  const std::string victim_uid = m["members"][1].value("uid", "");
  const int64_t generation = m.value("generation", int64_t{0});

  // The workers authenticate as their pods: the pod's service account may read its own job, nothing else.
  const std::string pod_kubeconfig = ProcessesOf(victim).at(0).kubeconfig;
  auto can = [&](const std::vector<std::string>& what) {
    std::vector<std::string> argv = {
        cluster_.Get("KUBECTL"), "--kubeconfig", pod_kubeconfig, "auth", "can-i", "-n", ns_};
    argv.insert(argv.end(), what.begin(), what.end());
    auto r = RunCommand(argv, seconds(30));
    return r.ok() ? r->out.substr(0, r->out.find('\n')) : r.status().ToString();
  };
  EXPECT_EQ(can({"watch", std::string(api::kCrdName) + "/" + kJob}), "yes");
  EXPECT_EQ(can({"list", "pods"}), "no");
  EXPECT_EQ(can({"get", "secrets"}), "no");

  ASSERT_OK(runner_->Signal(victim, SIGKILL)) << victim;
  // Its pod fails with the signal's exit code; the operator drops it, counts the failure and replaces it.
  Status reported = WaitFor("the crash reported as a failed pod", seconds(20), [&](std::string* last) {
    auto procs = ProcessesOf(victim);
    *last = procs.empty() ? "no process" : "exit " + std::to_string(procs[0].exit_code);
    return !procs.empty() && procs[0].reported;
  });
  ASSERT_OK(reported) << reported;
  EXPECT_EQ(ProcessesOf(victim)[0].exit_code, 128 + SIGKILL);
  std::string failed = WaitForMembershipEvent("WorkerFailed", 2);
  EXPECT_NE(failed.find("generation " + std::to_string(generation + 1) + ","), std::string::npos) << failed;
  EXPECT_NE(failed.find(victim), std::string::npos) << failed;
  WaitForJob("the replacement to join", seconds(30), [&](const json& j) {
    for (const auto& member : Membership(j).value("members", json::array()))
      if (member.value("pod", "") == victim && member.value("uid", "") != victim_uid)
        return Membership(j).value("worldSize", 0) == 3;
    return false;
  });

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  // The replacement (same pod name, new pod) trained to the end: its process exited 0 with weights.
  auto procs = ProcessesOf(victim);
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_NE(procs[1].uid, victim_uid);
  EXPECT_EQ(procs[1].exit_code, 0);
  EXPECT_TRUE(finishers.count(victim)) << "the replacement wrote no final weights";
  EXPECT_EQ(Job()["status"].value("restartCount", -1), 1);
}

// PyTorch scripts as the job's workers — Horovod's elastic API through `import ringmaster.torch as hvd`, and
// unmodified DDP on the "ringmaster" backend — : a worker SIGKILLed mid-run is replaced and the job ends
// with the one-process weights, every sample once per epoch.
class PyTorchWorkersE2eTest : public ElasticWorkersE2eTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(PyTorchWorkersE2eTest, WorkerKilledAndTheJobFinishesExactly) {
  ASSERT_STRNE(RINGMASTER_PYTHON, "") << "built without the Python package (-DRINGMASTER_PYTHON=OFF)";
  workload_ = PyTorchExample(out_ + "/train", GetParam());
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  ASSERT_OK(runner_->Signal(victim, SIGKILL)) << victim;
  WaitForMembershipEvent("WorkerFailed", 2);
  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_GE(finishers.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Examples, PyTorchWorkersE2eTest,
                         ::testing::Values("digits_horovod_elastic.py", "digits_ddp_elastic.py"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).find("ddp") != std::string::npos ? "Ddp" : "Horovod";
                         });

// FSDP2 on a DeviceMesh as the job's workers: digits_fsdp_mesh_elastic.py (MeshRule(tp=2): FSDP2 on dp, tensor
// parallel on tp) on 4 workers trains on a (2 x 2) mesh. Rank 1 SIGKILLed mid-run leaves 3, and its node is
// cordoned so that no replacement can come at once: the job continues on a (1 x 2) mesh over two of them, the
// third standing by, the sharded state resharded from the DCP checkpoint in the job's spec.checkpoint directory
// (the host's in process mode, so shared by every worker). Then the node is given back: the replacement may
// join before the end and the mesh grow back to (2 x 2) with the old rank 2 as rank 1, or the job may finish on
// 3; either way it ends with the one-process weights and every sample once per epoch.
TEST_F(ElasticWorkersE2eTest, PyTorchFsdpMeshLosesAWorkerAndFinishesExactly) {
  ASSERT_STRNE(RINGMASTER_PYTHON, "") << "built without the Python package (-DRINGMASTER_PYTHON=OFF)";
  workload_ = PyTorchExample(out_ + "/train", "digits_fsdp_mesh_elastic.py");
  // One epoch (28 steps after the initial commit; the reference too): the kill lands at step 8 or later.
  workload_.args = {"--epochs", "1", "--step-delay-ms", "150", "--tp", "2"};
  *(std::find(workload_.reference.begin(), workload_.reference.end(), "--epochs") + 1) = "1";
  workload_.epochs = 1;
  workload_.workers = 4;
  workload_.env.push_back({"OMP_NUM_THREADS", "1"});  // four torch processes on a small machine
  // Four processes import torch (and FSDP, DCP) at once before the first step: on a busy 2-core
  // machine that alone can take a minute.
  workload_.start_timeout = seconds(150);
  const std::string ckpt = out_ + "/ckpt";
  std::filesystem::create_directories(ckpt);
  spec_extra_ = "  checkpoint: {volumeName: ckpt, path: " + ckpt + "}\n";
  pod_extra_ = "      volumes: [{name: ckpt, hostPath: {path: " + ckpt + ", type: Directory}}]\n";
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const std::string rank0 = m["members"][0].value("pod", "");
  const std::string victim = m["members"][1].value("pod", "");
  const std::string node = m["members"][1].value("node", "");
  // Rank 0 logs every generation's mesh ("generation G: mesh dp=D x tp=2 over N of W workers ...").
  auto rank0_log = [&] {
    std::ifstream in(ProcessesOf(rank0).at(0).log_file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_NE(rank0_log().find("mesh dp=2 x tp=2 over 4 of 4 workers (0 standing by)"), std::string::npos);

  ASSERT_COMMAND_OK(cluster_.Kubectl({"cordon", node}));
  ASSERT_OK(runner_->Signal(victim, SIGKILL)) << victim;
  WaitForMembershipEvent(std::set<std::string>{"WorkerFailed", "WorkerRemoved"}, 3);
  Status shrunk = WaitFor("rank 0 to train on a (1 x 2) mesh with a standby", seconds(60), [&](std::string* last) {
    std::string log = rank0_log();
    *last = log.substr(log.size() > 600 ? log.size() - 600 : 0);
    return log.find("mesh dp=1 x tp=2 over 2 of 3 workers (1 standing by)") != std::string::npos;
  });
  ASSERT_OK(shrunk) << shrunk;
  ASSERT_COMMAND_OK(cluster_.Kubectl({"uncordon", node}));

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  // Every member at the end writes rank 0's weights, the standby too: the 3 survivors, and the
  // replacement (the victim's pod name) when it joined in time.
  EXPECT_TRUE(finishers.size() == 3u || finishers.size() == 4u) << finishers.size() << " workers wrote final weights";
  // No worker but the victim died: each that ended by itself exited 0 (a replacement still starting when
  // the job ended is killed with its pod, which is no failure of its own).
  for (const auto& p : runner_->Processes()) {
    if (p.pod == victim && p.uid == m["members"][1].value("uid", "")) continue;
    if (!p.running && p.killed_for.empty()) {
      EXPECT_EQ(p.exit_code, 0) << p.pod << " (uid " << p.uid << "): " << p.log_file;
    }
  }
  std::istringstream lines(rank0_log());
  for (std::string line; std::getline(lines, line);) {
    if (line.find(": mesh dp=") != std::string::npos) std::cout << line << "\n";
    if (line.find("FIGURE mesh-rebuild") != std::string::npos) std::cout << line.substr(line.find("FIGURE")) << "\n";
  }
  EXPECT_NE(rank0_log().find("FIGURE mesh-rebuild"), std::string::npos) << "no FIGURE line after the rebuild";
}

TEST_F(ElasticWorkersE2eTest, LostNodeKillsItsWorkerAndTheJobFinishesExactly) {
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const std::string victim = m["members"][1].value("pod", "");
  const std::string node = m["members"][1].value("node", "");
  const int64_t generation = m.value("generation", int64_t{0});
  std::set<std::string> first_members;
  for (const auto& member : m["members"]) first_members.insert(member.value("pod", ""));

  auto label = cluster_.Kubectl({"label", "node", node, "node-not-ready.stage.kwok.x-k8s.io=true"});
  ASSERT_COMMAND_OK(label);
  // The runner kills the worker at once (a lost machine) and reports nothing; the operator drops it
  // after nodeUnresponsiveSeconds and a replacement joins on the spare node.
  Status killed = WaitFor("the lost node's worker to be killed", seconds(10), [&](std::string* last) {
    auto procs = ProcessesOf(victim);
    *last = procs.empty() ? "no process" : procs[0].killed_for;
    return !procs.empty() && !procs[0].running;
  });
  ASSERT_OK(killed) << killed;
  EXPECT_NE(ProcessesOf(victim)[0].killed_for.find("NotReady"), std::string::npos);
  EXPECT_FALSE(ProcessesOf(victim)[0].reported);
  std::string lost = WaitForMembershipEvent("NodeLost", 2);
  EXPECT_NE(lost.find(victim), std::string::npos) << lost;
  EXPECT_NE(lost.find("generation " + std::to_string(generation + 1) + ","), std::string::npos) << lost;
  std::string replacement;
  WaitForJob("a replacement to join", seconds(30), [&](const json& j) {
    for (const auto& member : Membership(j).value("members", json::array()))
      if (!first_members.count(member.value("pod", ""))) replacement = member.value("pod", "");
    return !replacement.empty() && Membership(j).value("worldSize", 0) == 3;
  });

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_FALSE(finishers.count(victim));
  EXPECT_TRUE(finishers.count(replacement)) << "the replacement " << replacement << " wrote no final weights";
  EXPECT_EQ(Job()["status"].value("restartCount", -1), 0) << "a lost node is not a worker failure";
}

TEST_F(ElasticWorkersE2eTest, ScaleDownLetsTheRemovedWorkerExitZeroAndTheJobFinishesExactly) {
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const std::string leaving = m["members"][2].value("pod", "");
  const std::string leaving_uid = m["members"][2].value("uid", "");
  const int64_t generation = m.value("generation", int64_t{0});

  auto scaled = cluster_.Kubectl({"scale", "-n", ns_, "tj/" + kJob, "--replicas=2"});
  ASSERT_COMMAND_OK(scaled) << (scaled.ok() ? scaled->err : "");
  std::string scaled_down = WaitForMembershipEvent("ScaledDown", 2);
  EXPECT_NE(scaled_down.find(leaving), std::string::npos) << scaled_down;
  EXPECT_NE(scaled_down.find("generation " + std::to_string(generation + 1) + ","), std::string::npos) << scaled_down;
  // The highest rank leaves: it commits, exits 0 by itself, its pod Succeeds and is then deleted.
  Status exited = WaitFor("the removed worker to exit", seconds(20), [&](std::string* last) {
    auto procs = ProcessesOf(leaving);
    *last =
        procs.empty() ? "no process" : (procs[0].running ? "running" : "exit " + std::to_string(procs[0].exit_code));
    return !procs.empty() && !procs[0].running;
  });
  ASSERT_OK(exited) << exited;
  RunnerProcess p = ProcessesOf(leaving)[0];
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_EQ(p.killed_for, "") << "the leaving worker was killed instead of exiting";
  Status reported = WaitFor("the removed worker's exit reported", seconds(10),
                            [&](std::string*) { return ProcessesOf(leaving)[0].reported; });
  EXPECT_OK(reported) << reported;
  Status gone = WaitFor("the removed worker's pod to go away", seconds(20), [&](std::string* last) {
    auto pod = cluster_.KubectlJson({"get", "pod", leaving, "-n", ns_});
    if (!pod.ok()) return pod.status().message().find("NotFound") != std::string::npos;
    *last = (*pod)["status"].value("phase", "");
    return (*pod)["metadata"].value("uid", "") != leaving_uid;
  });
  EXPECT_OK(gone) << gone;

  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_FALSE(finishers.count(leaving)) << "a worker that left wrote final weights";
  EXPECT_EQ(finishers.size(), 2u);
  EXPECT_EQ(ProcessesOf(leaving).size(), 1u) << "the removed worker was started again";
}

}  // namespace
}  // namespace ringmaster::testing
