// The TrainingJob CRD on the real apiserver: samples are accepted, bad manifests are refused with the
// CEL message that tells a person what to fix, and `kubectl scale` drives spec.replicas.desired.
#include <gtest/gtest.h>

#include <string>

#include "base/status_test_macros.h"
#include "tests/support/cluster_test.h"
#include "tests/support/manifests.h"

namespace ringmaster::testing {
namespace {

const std::string kCrdDir = std::string(RINGMASTER_SOURCE_DIR) + "/crds";

class TrainingJobCrdTest : public JobTest {
 protected:
  TrainingJobCrdTest() : JobTest("crd") {}

  // Applies `manifest` in this test's namespace; returns kubectl's result.
  CommandResult ApplyHere(const std::string& manifest) {
    auto r = cluster_.Kubectl({"apply", "-n", ns_, "-f", "-"}, manifest);
    EXPECT_OK(r) << r.status();
    return r.ok() ? *r : CommandResult{};
  }

  static std::string Job(const std::string& name, const std::string& replicas, const std::string& container) {
    return ringmaster::testing::TrainingJobHead() + "metadata:\n  name: " + name + "\nspec:\n  replicas: " + replicas +
           "\n  template:\n    spec:\n      containers:\n" + container;
  }
  static std::string Container(const std::string& gpus) {
    return "      - name: trainer\n        image: example/trainer:1\n        resources:\n          limits:\n"
           "            nvidia.com/gpu: " +
           gpus + "\n";
  }

  // Expects `manifest` to be refused with `message` in kubectl's error.
  void ExpectRefused(const std::string& manifest, const std::string& message) {
    CommandResult r = ApplyHere(manifest);
    EXPECT_NE(r.exit_code, 0) << "accepted:\n" << manifest;
    EXPECT_NE(r.err.find("is invalid"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << "wanted '" << message << "' in: " << r.err;
  }
};

TEST_F(TrainingJobCrdTest, EverySampleIsAccepted) {
  for (const char* sample : {"minimal", "elastic-gpu", "with-checkpoints", "pytorch-ddp-gpu", "horovod-gpu"}) {
    auto r = cluster_.Kubectl({"apply", "-n", ns_, "-f", kCrdDir + "/samples/" + sample + ".yaml"});
    ASSERT_OK(r) << r.status();
    EXPECT_TRUE(r->ok()) << sample << ": " << r->err;
  }
  // Reachable by its short name, with defaults filled in by the schema.
  auto tj = cluster_.KubectlJson({"get", "tj", "with-checkpoints", "-n", ns_});
  ASSERT_OK(tj) << tj.status();
  EXPECT_EQ((*tj)["spec"]["checkpoint"].value("keep", 0), 3);
  EXPECT_EQ((*tj)["spec"]["runPolicy"].value("cleanPodPolicy", ""), "Running");
  EXPECT_EQ((*tj)["spec"]["replicas"].value("multipleOf", 0), 1);
}

TEST_F(TrainingJobCrdTest, PrinterColumnsShowWorkersGenerationAndPhase) {
  ASSERT_COMMAND_OK(ApplyHere(Job("cols", "{min: 1, max: 2}", Container("1"))));
  auto r = cluster_.Kubectl({"get", std::string(api::kResource), "-n", ns_});
  ASSERT_COMMAND_OK(r);
  std::string header = r->out.substr(0, r->out.find('\n'));
  for (const char* column : {"NAME", "READY", "DESIRED", "GENERATION", "PODS", "WORLD", "PHASE", "AGE"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << " missing from: " << header;
  }
}

TEST_F(TrainingJobCrdTest, MinBelowOneIsRefused) {
  ExpectRefused(Job("j", "{min: 0, max: 2}", Container("1")), "spec.replicas.min must be at least 1");
}

TEST_F(TrainingJobCrdTest, MinAboveMaxIsRefused) {
  ExpectRefused(Job("j", "{min: 3, max: 2}", Container("1")),
                "spec.replicas.min must not be greater than spec.replicas.max");
}

TEST_F(TrainingJobCrdTest, DesiredOutsideBoundsIsRefused) {
  ExpectRefused(Job("j", "{min: 2, max: 4, desired: 5}", Container("1")),
                "spec.replicas.desired must lie between spec.replicas.min and spec.replicas.max");
}

TEST_F(TrainingJobCrdTest, JobWithoutContainersIsRefused) {
  std::string job = Job("j", "{min: 1, max: 1}", "");
  job.replace(job.find("containers:\n"), 12, "containers: []\n");
  ExpectRefused(job, "spec.template.spec.containers must list at least one container");
}

TEST_F(TrainingJobCrdTest, FractionalOrZeroGpuLimitIsRefused) {
  ExpectRefused(Job("j", "{min: 1, max: 1}", Container("\"0.5\"")),
                "limits[\"nvidia.com/gpu\"] must be a positive whole number of GPUs");
  ExpectRefused(Job("j", "{min: 1, max: 1}", Container("0")),
                "limits[\"nvidia.com/gpu\"] must be a positive whole number of GPUs");
  CommandResult ok = ApplyHere(Job("string-gpus", "{min: 1, max: 1}", Container("\"2\"")));
  EXPECT_COMMAND_OK(ok);
}

TEST_F(TrainingJobCrdTest, ACheckpointVolumeTheTemplateLacksIsRefused) {
  std::string job = Job("j", "{min: 1, max: 1}", Container("1"));
  job.insert(job.find("  template:"), "  checkpoint: {volumeName: ckpt, path: /checkpoints}\n");
  ExpectRefused(job, "spec.checkpoint.volumeName 'ckpt' names no volume of spec.template.spec.volumes");
  job += "      volumes: [{name: ckpt, emptyDir: {}}]\n";
  EXPECT_COMMAND_OK(ApplyHere(job));
}

TEST_F(TrainingJobCrdTest, RelativeCheckpointPathIsRefused) {
  std::string job = Job("j", "{min: 1, max: 1}", Container("1"));
  job.insert(job.find("  template:"), "  checkpoint: {volumeName: ckpt, path: checkpoints}\n");
  ExpectRefused(job, "spec.checkpoint.path must be an absolute path");
}

TEST_F(TrainingJobCrdTest, KubectlScaleDrivesDesiredWithinBounds) {
  ASSERT_COMMAND_OK(ApplyHere(Job("scaled", "{min: 2, max: 8}", Container("1"))));
  auto r = cluster_.Kubectl({"scale", "-n", ns_, "tj/scaled", "--replicas=4"});
  ASSERT_COMMAND_OK(r) << (r.ok() ? r->err : r.status().ToString());
  auto tj = cluster_.KubectlJson({"get", "tj", "scaled", "-n", ns_});
  ASSERT_OK(tj);
  EXPECT_EQ((*tj)["spec"]["replicas"].value("desired", 0), 4);
  auto refused = cluster_.Kubectl({"scale", "-n", ns_, "tj/scaled", "--replicas=9"});
  ASSERT_OK(refused);
  EXPECT_NE(refused->exit_code, 0);
  EXPECT_NE(refused->err.find("spec.replicas.desired must lie between"), std::string::npos) << refused->err;
}

TEST_F(TrainingJobCrdTest, BoundsThatAreNotMultiplesOfMultipleOfAreRefusedWithTheNearestValues) {
  ExpectRefused(Job("j", "{min: 3, max: 4, multipleOf: 2}", Container("1")),
                "spec.replicas.min (3) must be a multiple of spec.replicas.multipleOf (2): set it to 2 or 4");
  ExpectRefused(Job("j", "{min: 2, max: 5, multipleOf: 2}", Container("1")),
                "spec.replicas.max (5) must be a multiple of spec.replicas.multipleOf (2): set it to 4 or 6");
  ExpectRefused(Job("j", "{min: 1, max: 4, multipleOf: 2}", Container("1")),
                "spec.replicas.min (1) must be a multiple of spec.replicas.multipleOf (2): set it to 2");
  ExpectRefused(Job("j", "{min: 4, max: 8, desired: 6, multipleOf: 4}", Container("1")),
                "spec.replicas.desired (6, `kubectl scale --replicas`) must be a multiple of spec.replicas.multipleOf "
                "(4): set it to 4 or 8");
  ExpectRefused(Job("j", "{min: 2, max: 4, multipleOf: 0}", Container("1")), "spec.replicas.multipleOf");
  EXPECT_COMMAND_OK(ApplyHere(Job("groups", "{min: 2, max: 6, desired: 4, multipleOf: 2}", Container("1"))));
}

TEST_F(TrainingJobCrdTest, KubectlScaleToANonMultipleIsRefused) {
  ASSERT_COMMAND_OK(ApplyHere(Job("grouped", "{min: 2, max: 8, multipleOf: 2}", Container("1"))));
  auto ok = cluster_.Kubectl({"scale", "-n", ns_, "tj/grouped", "--replicas=6"});
  ASSERT_COMMAND_OK(ok) << (ok.ok() ? ok->err : ok.status().ToString());
  auto refused = cluster_.Kubectl({"scale", "-n", ns_, "tj/grouped", "--replicas=5"});
  ASSERT_OK(refused);
  EXPECT_NE(refused->exit_code, 0);
  EXPECT_NE(refused->err.find("spec.replicas.desired (5, `kubectl scale --replicas`) must be a multiple of "
                              "spec.replicas.multipleOf (2): set it to 4 or 6"),
            std::string::npos)
      << refused->err;
  auto tj = cluster_.KubectlJson({"get", "tj", "grouped", "-n", ns_});
  ASSERT_OK(tj);
  EXPECT_EQ((*tj)["spec"]["replicas"].value("desired", 0), 6);
}

TEST_F(TrainingJobCrdTest, MultipleOfCannotBeChanged) {
  ASSERT_COMMAND_OK(ApplyHere(Job("fixed", "{min: 4, max: 8, multipleOf: 2}", Container("1"))));
  ExpectRefused(Job("fixed", "{min: 4, max: 8, multipleOf: 4}", Container("1")),
                "spec.replicas.multipleOf cannot be changed; delete and recreate the job to change it");
  // The bounds may still change, in whole groups.
  EXPECT_COMMAND_OK(ApplyHere(Job("fixed", "{min: 2, max: 6, multipleOf: 2}", Container("1"))));
}

// spec.processesPerPod: 1..64, fixed for the job's life; multipleOf counts ranks, so 1 to 3 pods of 2 ranks
// are whole groups of 2, while 3 pods of 1 rank are not, and the message says why.
TEST_F(TrainingJobCrdTest, ProcessesPerPodIsBoundedFixedAndMultipleOfCountsItsRanks) {
  auto with_processes = [](const std::string& name, const std::string& replicas, int processes) {
    std::string job = Job(name, replicas, Container("2"));
    return job.replace(job.find("\n  template:"), 0, "\n  processesPerPod: " + std::to_string(processes));
  };
  EXPECT_COMMAND_OK(ApplyHere(with_processes("ranks", "{min: 1, max: 3, multipleOf: 2}", 2)));
  ExpectRefused(with_processes("ranks", "{min: 1, max: 3, multipleOf: 2}", 1),
                "spec.processesPerPod cannot be changed; delete and recreate the job to change it");
  ExpectRefused(
      with_processes("odd", "{min: 1, max: 3, multipleOf: 4}", 2),
      "spec.replicas.min (1) times spec.processesPerPod (2) must be a multiple of spec.replicas.multipleOf (4)");
  ExpectRefused(with_processes("none", "{min: 1, max: 3}", 0), "spec.processesPerPod");
  ExpectRefused(with_processes("many", "{min: 1, max: 3}", 65), "spec.processesPerPod");
}

}  // namespace
}  // namespace ringmaster::testing
