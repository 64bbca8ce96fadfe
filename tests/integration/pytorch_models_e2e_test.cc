// The model examples of crds/samples/pytorch-ddp-gpu.yaml and horovod-gpu.yaml as a TrainingJob's workers, on
// CPU: resnet_ddp_elastic.py (a small ResNet, unmodified DDP on the "ringmaster" backend) and
// gpt_horovod_elastic.py (a small GPT-2-style decoder, Horovod's elastic API). The fixture is
// elastic_workers_fixture.h's: the real operator, the workers from the worker image on the cluster's real nodes
// (kubelets on containerd). A worker's container is SIGKILLed mid-run through its node's containerd; the job
// must succeed with every finisher's weights equal to a one-process run of the same script (float64, 1e-9
// relative, run here from the checkout) and every sample once in the epoch.
#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

struct ModelExample {
  const char* test_name;
  const char* script;  // in worker-runtime/python/examples/
  size_t weights;      // parameters at the default --hidden 32
  int samples;         // the data set's size
};

// gtest names a parameter in test listings by this (not by its bytes).
void PrintTo(const ModelExample& example, std::ostream* os) { *os << example.script; }

// ResNet: stem conv 1->8 (72) + GroupNorm (16); block(8): 2 convs (1152) + 2 norms (32); conv 8->16 stride 2
// (1152) + norm (32); block(16): 2 convs (4608) + 2 norms (64); linear 16->10 (170). The digits: 1,797 images.
constexpr ModelExample kResnet = {"ResnetDdp", "resnet_ddp_elastic.py",
                                  72 + 16 + 1152 + 32 + 1152 + 32 + 4608 + 64 + 170, 1797};
// GPT (width 32, 2 layers, vocabulary and context 16): embeddings 2 * 512; per block LayerNorms 2 * 64, qkv
// 32*96+96, proj 32*32+32, MLP 32*128+128 + 128*32+32; final LayerNorm 64; head 32*16+16. 1,536 sequences.
constexpr ModelExample kGpt = {"GptHorovod", "gpt_horovod_elastic.py",
                               2 * 512 + 2 * (2 * 64 + 3168 + 1056 + 4224 + 4128) + 64 + 528, 1536};

// One epoch of the example (24 or 29 steps of the global batch of 64 after the initial commit), paced so the
// kill at step 8 lands mid-run; the workers write to `out` and find the script in `examples`; the reference runs
// the same script of this checkout as one process.
Workload ModelWorkload(const std::string& out, const std::string& examples, const ModelExample& example) {
  const std::string script = std::string(RINGMASTER_SOURCE_DIR) + "/worker-runtime/python/examples/" + example.script;
  Workload w;
  w.command = {"python", examples + "/" + example.script};
  w.args = {"--epochs", "1", "--step-delay-ms", "150"};
  w.reference = {RINGMASTER_PYTHON, script, "--epochs", "1"};
  w.env = {{std::string(api::env::kBackend), "gloo"},
           {std::string(api::env::kOut), out},
           {"OMP_NUM_THREADS", "1"}};  // three torch processes on a small machine: no oversubscribed threads
  w.weights = example.weights;
  w.epochs = 1;
  w.samples = example.samples;
  w.final_step = std::numeric_limits<int64_t>::max();
  w.disturb_at_step = 8;
  w.start_timeout = seconds(120);  // three processes import torch at once before the first step
  return w;
}

class PyTorchModelsE2eTest : public ElasticWorkersE2eTest, public ::testing::WithParamInterface<ModelExample> {
 protected:
  // Whether some worker's log shows it trained on the CPU in float64 (the exact path; gpu_common.py).
  bool SomeWorkerTrainedInFloat64OnCpu() {
    for (const auto& [pod, log] : WorkerLogs())
      if (log.find("(cpu, torch.float64)") != std::string::npos) return true;
    return false;
  }
};

TEST_P(PyTorchModelsE2eTest, WorkerKilledAndTheJobFinishesExactly) {
  ASSERT_STRNE(RINGMASTER_PYTHON, "") << "built without the Python package (-DRINGMASTER_PYTHON=OFF)";
  workload_ = ModelWorkload(WorkersOut(), ExamplesDir(), GetParam());
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  ASSERT_NO_FATAL_FAILURE(KillWorker(victim));
  WaitForMembershipEvent(std::set<std::string>{"WorkerFailed", "WorkerRemoved"}, 2);
  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_GE(finishers.size(), 2u);
  EXPECT_TRUE(SomeWorkerTrainedInFloat64OnCpu()) << "no worker logged '(cpu, torch.float64)'";
}

INSTANTIATE_TEST_SUITE_P(Examples, PyTorchModelsE2eTest, ::testing::Values(kResnet, kGpt),
                         [](const ::testing::TestParamInfo<ModelExample>& info) {
                           return std::string(info.param.test_name);
                         });

}  // namespace
}  // namespace ringmaster::testing
