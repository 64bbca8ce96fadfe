// kubectl-ringmaster (operator/kubectl_plugin) against the real operator and real workers on the test cluster's
// real nodes (integration/elastic_workers_fixture.h): `drill` hard-kills a rank of a training job and times the
// operator's detection and the job's recovery (from the workers' progress record); `status` then shows the
// generations the kill caused as a timeline, and `events` the job's and its pods' Events; and the job still
// finishes with the one-process weights, each sample once per epoch, as the suite's other kill tests require.
// Errors reach a user as one line: a job that does not exist, a rank that is not in the world, a kubeconfig
// that does not parse.
#include <regex>

#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

// Runs build/bin/kubectl-ringmaster with `args` (after kubectl's own flags, which `prefix` gives).
StatusOr<CommandResult> RunPlugin(const std::vector<std::string>& prefix, const std::vector<std::string>& args,
                                  seconds timeout = seconds(60)) {
  std::vector<std::string> argv = prefix;
  argv.push_back(RINGMASTER_KUBECTL_PLUGIN);
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout);
}

class KubectlPluginE2eTest : public ElasticWorkersE2eTest {
 protected:
  StatusOr<CommandResult> Plugin(const std::vector<std::string>& args, seconds timeout = seconds(60)) {
    std::vector<std::string> with = {"--kubeconfig", cluster_.kubeconfig(), "-n", ns_};
    with.insert(with.end(), args.begin(), args.end());
    return RunPlugin({}, with, timeout);
  }
};

// The first number after `prefix` in `text` (e.g. "recovery:   " -> 3.4); -1 without one.
double NumberAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + prefix.size());
}

TEST_F(KubectlPluginE2eTest, ADrillTimesDetectionAndRecoveryAndTheJobStillFinishesExactly) {
  // Paced slower than the suite's 100 ms a step (12 s of training), so that the job is still training when the
  // drill has seen it recover and `status` reads it. (The pacing does not change the arithmetic.)
  auto delay = std::find(workload_.args.begin(), workload_.args.end(), "--step-delay-ms");
  ASSERT_NE(delay, workload_.args.end());
  *std::next(delay) = "250";
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const json m = Membership(running);
  const int64_t generation = m.value("generation", int64_t{0});

  // A rank outside the world is refused, with the world it has; nothing is killed.
  auto outside = Plugin({"kill", kJob, "--rank", "7"});
  ASSERT_OK(outside);
  EXPECT_EQ(outside->exit_code, 1) << outside->out;
  EXPECT_NE(outside->err.find("error: rank 7 is not in generation " + std::to_string(generation) + " of trainingjob " +
                              ns_ + "/" + kJob + " (world size 3: ranks 0-2)"),
            std::string::npos)
      << outside->err;

  auto drill = Plugin({"drill", kJob, "--timeout", "150s"}, seconds(180));
  ASSERT_OK(drill);
  std::cout << "---- kubectl ringmaster drill ----\n" << drill->out << drill->err;
  // Exit 0 on recovery. (Checked without stopping here: the timeline, the events and the job's exact end are
  // checked below whatever the drill concluded.)
  EXPECT_EQ(drill->exit_code, 0) << drill->err;
  // The pod it names was a member of the running generation, with that uid; it is gone.
  std::smatch killed;
  ASSERT_TRUE(std::regex_search(drill->out, killed, std::regex("killed pod (\\S+) \\(uid (\\S+)\\)"))) << drill->out;
  bool was_member = false;
  for (const auto& member : m["members"])
    was_member |= member.value("pod", "") == killed[1].str() && member.value("uid", "") == killed[2].str();
  EXPECT_TRUE(was_member) << killed[0] << " is not a member of " << m.dump();
  EXPECT_OK(WaitForPodGone(killed[1].str(), killed[2].str(), seconds(30)));
  // Detection, as it was announced: a generation after the running one.
  std::smatch detected;
  ASSERT_TRUE(std::regex_search(drill->out, detected, std::regex("detected: generation ([0-9]+) \\(([A-Za-z]+)")))
      << drill->out;
  EXPECT_GT(std::stoll(detected[1].str()), generation) << drill->out;
  // A kill is a loss, not an orderly departure (Disrupted would tell the survivors to wait for its commit).
  EXPECT_TRUE(detected[2].str() == "WorkerRemoved" || detected[2].str() == "WorkerFailed") << detected[0];
  // The result: detection and recovery in seconds, the job's history beside them.
  const double detection = NumberAfter(drill->out, "detection:  ");
  const double recovery = NumberAfter(drill->out, "recovery:   ");
  EXPECT_GE(detection, 0) << drill->out;
  EXPECT_GT(recovery, 0) << drill->out;
  EXPECT_GE(recovery, detection - 1) << "recovered before the operator published the change (whole seconds)";
  EXPECT_LT(recovery, 150) << drill->out;
  EXPECT_NE(drill->out.find("job history: "), std::string::npos) << drill->out;
  std::printf("FIGURE drill_detection_s %.1f\nFIGURE drill_recovery_s %.1f\n", detection, recovery);

  // status: the generations as a timeline, the kill's among them (WorkerRemoved: its pod was deleted; WorkerFailed
  // when the kubelet's report of the dead container came first).
  auto status = Plugin({"status", kJob});
  ASSERT_COMMAND_OK(status);
  std::cout << "---- kubectl ringmaster status ----\n" << status->out;
  std::istringstream lines(status->out.substr(status->out.find("Generations:")));
  int generations = 0;
  bool loss = false;
  for (std::string line; std::getline(lines, line);) {
    std::smatch row;
    if (!std::regex_search(line, row, std::regex("^  ([0-9]+) +\\S+ +([0-9]+) "))) continue;
    ++generations;
    if (std::stoll(row[1].str()) > generation && row[2].str() == "2" &&
        (line.find(" WorkerRemoved ") != std::string::npos || line.find(" WorkerFailed ") != std::string::npos)) {
      loss = true;
      EXPECT_NE(line.find(killed[1].str()), std::string::npos) << "the loss names the killed pod: " << line;
    }
  }
  EXPECT_GE(generations, 2) << status->out;
  EXPECT_TRUE(loss) << "no WorkerRemoved/WorkerFailed generation of world size 2 after generation " << generation
                    << ":\n"
                    << status->out;
  EXPECT_NE(status->out.find("TrainingJob " + ns_ + "/" + kJob + "\nPhase:"), std::string::npos) << status->out;

  // events: the job's and its worker pods', the killed one's included.
  auto events = Plugin({"events", kJob});
  ASSERT_COMMAND_OK(events);
  EXPECT_NE(events->out.find("trainingjob/" + kJob), std::string::npos) << events->out;
  EXPECT_NE(events->out.find("pod/" + killed[1].str()), std::string::npos) << events->out;

  ExpectSucceededWithExactResults();
}

// The errors a user meets first, each one line on stderr and exit 1; the kubeconfig rules kubectl users expect.
class KubectlPluginErrorsTest : public JobTest {
 protected:
  KubectlPluginErrorsTest() : JobTest("plugin") {}
};

TEST_F(KubectlPluginErrorsTest, AJobThatDoesNotExistOrABadKubeconfigIsOneClearLine) {
  const std::string not_found =
      "error: trainingjob " + ns_ + "/nosuch not found; kubectl get trainingjobs -n " + ns_ + " lists them\n";
  for (const auto& args : std::vector<std::vector<std::string>>{{"kill", "nosuch", "--rank", "0"},
                                                                {"drill", "nosuch", "--timeout", "10s"},
                                                                {"status", "nosuch"},
                                                                {"events", "nosuch"}}) {
    auto r = RunPlugin({}, [&] {
      std::vector<std::string> a = {"--kubeconfig", cluster_.kubeconfig(), "--namespace", ns_};
      a.insert(a.end(), args.begin(), args.end());
      return a;
    }());
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 1) << args[0];
    EXPECT_EQ(r->err, not_found) << args[0];
  }

  // KUBECONFIG as a list (a missing file skipped), the namespace after the command.
  auto listed = RunPlugin({"env", "KUBECONFIG=" + cluster_.dir() + "/absent.yaml:" + cluster_.kubeconfig()},
                          {"kill", "nosuch", "--rank", "0", "-n", ns_});
  ASSERT_OK(listed);
  EXPECT_EQ(listed->err, not_found);

  // A malformed kubeconfig: one line naming it, never a crash.
  const std::string bad = ::testing::TempDir() + "kubectl-plugin-bad-" + ns_ + ".yaml";
  std::ofstream(bad) << "apiVersion: v1\nclusters:\n- name: {{{\n  cluster: [\n";
  auto malformed = RunPlugin({"env", "KUBECONFIG=" + bad}, {"status", "nosuch"});
  ASSERT_OK(malformed);
  EXPECT_EQ(malformed->exit_code, 1);
  EXPECT_EQ(malformed->err.rfind("error: the kubeconfig KUBECONFIG=" + bad + " is not usable: ", 0), 0u)
      << malformed->err;
  EXPECT_EQ(std::count(malformed->err.begin(), malformed->err.end(), '\n'), 1) << malformed->err;
  std::filesystem::remove(bad);

  // An unknown context names the contexts command.
  auto context = RunPlugin({}, {"--kubeconfig", cluster_.kubeconfig(), "--context", "nope", "status", "x"});
  ASSERT_OK(context);
  EXPECT_EQ(context->exit_code, 1);
  EXPECT_NE(context->err.find("context \"nope\" not found; `kubectl config get-contexts`"), std::string::npos)
      << context->err;
}

}  // namespace
}  // namespace ringmaster::testing
