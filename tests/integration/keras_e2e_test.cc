// The Keras 3 elastic example (worker-runtime/python/examples/keras_elastic.py: ringmaster.keras's
// DistributedOptimizer, its elastic callbacks and the exactly-once tf.data path) as a TrainingJob's workers from
// the TensorFlow worker image (ringmaster-worker-tensorflow), on the cluster's real nodes. A worker's container
// is SIGKILLed mid-run through its node's containerd; the job must succeed with every finisher's weights equal
// to a one-process run of the same script (float64, 1e-9 relative, run here from the checkout with the
// project's venv) and every sample once in the epoch. The fixture is elastic_workers_fixture.h's.
#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

// One epoch of the digits (1,797 samples, global batch 64: 29 steps after the initial commit), paced so the
// kill at step 8 lands mid-run.
Workload KerasWorkload(const std::string& out, const std::string& examples) {
  const std::string script = std::string(RINGMASTER_SOURCE_DIR) + "/worker-runtime/python/examples/keras_elastic.py";
  Workload w;
  w.command = {"python", examples + "/keras_elastic.py"};
  w.args = {"--epochs", "1", "--step-delay-ms", "150"};
  w.reference = {RINGMASTER_PYTHON, script, "--epochs", "1"};
  // Three TensorFlow processes on a small machine: no oversubscribed thread pools.
  w.env = {{std::string(api::env::kBackend), "gloo"},
           {std::string(api::env::kOut), out},
           {"OMP_NUM_THREADS", "1"},
           {"TF_NUM_INTRAOP_THREADS", "1"},
           {"TF_NUM_INTEROP_THREADS", "2"}};
  w.weights = 64 * 32 + 32 + 32 * 10 + 10;  // the digits MLP at --hidden 32
  w.epochs = 1;
  w.samples = 1797;
  w.final_step = std::numeric_limits<int64_t>::max();
  w.disturb_at_step = 8;
  w.start_timeout = seconds(180);  // three processes import TensorFlow and trace the train function first
  return w;
}

class KerasE2eTest : public ElasticWorkersE2eTest {};

TEST_F(KerasE2eTest, WorkerKilledAndTheJobFinishesExactly) {
  ASSERT_STRNE(RINGMASTER_PYTHON, "") << "built without the Python package (-DRINGMASTER_PYTHON=OFF)";
  auto image = RegistryImage(cluster_, "ringmaster-worker-tensorflow", RINGMASTER_IMAGE_TAG);
  ASSERT_OK(image) << image.status();
  image_ = *image;
  workload_ = KerasWorkload(WorkersOut(), ExamplesDir());
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  ASSERT_NO_FATAL_FAILURE(KillWorker(victim));
  WaitForMembershipEvent(std::set<std::string>{"WorkerFailed", "WorkerRemoved"}, 2);
  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_GE(finishers.size(), 2u);
}

}  // namespace
}  // namespace ringmaster::testing
