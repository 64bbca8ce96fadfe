// The TrainingJob CRD on the real apiserver: samples are accepted, bad manifests are refused with the
// CEL message that tells a person what to fix, `kubectl scale` drives spec.replicas.desired, and spec.template
// is the full PodTemplateSpec schema: a misspelled field in it is refused (kubectl's strict field validation)
// and `kubectl explain` describes its fields.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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

  // `kubectl create --validate=strict` of `manifest` (the apiserver's fieldValidation=Strict, kubectl's default).
  CommandResult CreateStrict(const std::string& manifest) {
    auto r = cluster_.Kubectl({"create", "--validate=strict", "-n", ns_, "-f", "-"}, manifest);
    EXPECT_OK(r) << r.status();
    return r.ok() ? *r : CommandResult{};
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

// The schema's bounds (minimum 1, maximum 4096), which the CEL rules agree with.
TEST_F(TrainingJobCrdTest, MinBelowOneIsRefused) {
  ExpectRefused(Job("j", "{min: 0, max: 2}", Container("1")), "spec.replicas.min: Invalid value: 0");
  ExpectRefused(Job("j", "{min: 0, max: 2}", Container("1")), "should be greater than or equal to 1");
}

TEST_F(TrainingJobCrdTest, MaxAbove4096IsRefused) {
  ExpectRefused(Job("j", "{min: 1, max: 4097}", Container("1")), "spec.replicas.max: Invalid value: 4097");
  ExpectRefused(Job("j", "{min: 1, max: 4097}", Container("1")), "should be less than or equal to 4096");
}

// A misspelled field of the pod template is refused, naming it, as kubectl creates objects by default
// (fieldValidation=Strict); spelled right, the same field is kept.
TEST_F(TrainingJobCrdTest, AMisspelledTemplateFieldIsRefusedNamingIt) {
  std::string job = Job("tolerant", "{min: 1, max: 1}", Container("1"));
  const std::string misspelled = job + "      tolerationz: [{key: example.com/gpu, operator: Exists}]\n";
  CommandResult r = CreateStrict(misspelled);
  EXPECT_NE(r.exit_code, 0) << "accepted:\n" << misspelled;
  EXPECT_NE(r.err.find("unknown field \"spec.template.spec.tolerationz\""), std::string::npos) << r.err;

  ASSERT_COMMAND_OK(CreateStrict(job + "      tolerations: [{key: example.com/gpu, operator: Exists}]\n"));
  auto tj = cluster_.KubectlJson({"get", "tj", "tolerant", "-n", ns_});
  ASSERT_OK(tj) << tj.status();
  EXPECT_EQ((*tj)["spec"]["template"]["spec"]["tolerations"][0].value("key", ""), "example.com/gpu") << *tj;
}

TEST_F(TrainingJobCrdTest, AMisspelledContainerFieldIsRefusedNamingIt) {
  const std::string job =
      Job("puller", "{min: 1, max: 1}", Container("1") + "        imagePullPolicyy: IfNotPresent\n");
  CommandResult r = CreateStrict(job);
  EXPECT_NE(r.exit_code, 0) << "accepted:\n" << job;
  EXPECT_NE(r.err.find("unknown field \"spec.template.spec.containers[0].imagePullPolicyy\""), std::string::npos)
      << r.err;
}

// Without strict validation the apiserver drops (prunes) an unknown template field rather than keeping it:
// the schema is structural all the way down.
TEST_F(TrainingJobCrdTest, AnUnknownTemplateFieldIsPrunedWithoutStrictValidation) {
  const std::string job = Job("pruned", "{min: 1, max: 1}", Container("1")) + "      tolerationz: [{key: a}]\n";
  auto r = cluster_.Kubectl({"create", "--validate=false", "-n", ns_, "-f", "-"}, job);
  ASSERT_COMMAND_OK(r);
  auto tj = cluster_.KubectlJson({"get", "tj", "pruned", "-n", ns_});
  ASSERT_OK(tj) << tj.status();
  EXPECT_FALSE((*tj)["spec"]["template"]["spec"].contains("tolerationz")) << *tj;
  EXPECT_EQ((*tj)["spec"]["template"]["spec"]["containers"][0].value("image", ""), "example/trainer:1");
}

// The template's fields are documented: `kubectl explain` prints Kubernetes's own description of them (and
// ours of our fields). The apiserver publishes a CRD's OpenAPI shortly after it is Established: polled.
TEST_F(TrainingJobCrdTest, KubectlExplainDescribesTemplateFields) {
  for (const auto& [field, wanted] : std::vector<std::pair<std::string, std::string>>{
           {"trainingjob.spec.template.spec.tolerations", "If specified, the pod's tolerations."},
           {"trainingjob.spec.template.spec.containers.imagePullPolicy", "Image pull policy."},
           {"trainingjob.spec.replicas.min", "gang minimum"}}) {
    std::string out;
    Status explained = WaitFor("kubectl explain " + field, std::chrono::seconds(30), [&](std::string* seen) {
      auto r = cluster_.Kubectl({"explain", field});
      if (!r.ok()) return false;
      out = r->out;
      *seen = r->out + r->err;
      return r->ok() && r->out.find(wanted) != std::string::npos;
    });
    EXPECT_OK(explained) << "wanted '" << wanted << "' in kubectl explain " << field << ": " << explained;
    EXPECT_NE(out.find("DESCRIPTION:"), std::string::npos) << out;
  }
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
