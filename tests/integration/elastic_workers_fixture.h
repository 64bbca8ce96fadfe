// The fixture of the e2e tests that run real workers under the real operator: the job's pods run on the test
// cluster's real nodes (kubelets on containerd, tests/harness/cluster/real_nodes.sh) from the worker image that
// `make images` writes and ctest's cluster.images pushes to the cluster's registry (so each test binary needs the
// ctest fixture real_node_images); the operator runs as a process of the test (elastic_workers_e2e_test.cc), as
// two replicas (replicated_operator_fixture.h), or from its image by the chart (helm_install_e2e_test.cc). It
// holds the training the workers run (Workload: the C++ example trainer or the PyTorch digits example), applies the
// job, follows its progress through the workers' journals, and checks the end: the job Succeeded, every finisher's
// weights equal a one-process run (float64, 1e-9 relative), each epoch's samples committed exactly once.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/status_test_macros.h"
#include "tests/integration/pod_history.h"
#include "tests/support/cluster_test.h"
#include "tests/support/manifests.h"
#include "tests/support/operator_process.h"
#include "tests/support/real_nodes.h"
#include "worker-runtime/elastic/sample_journal.h"
#include "worker-runtime/testing/chaos_harness.h"

namespace ringmaster::testing {

// The training: 120 steps of a fixed global batch of 8 over 48 samples (20 epochs), paced so the
// disturbances land mid-run and the rebuilds finish well before the end.
inline constexpr int kSteps = 120, kSamples = 48, kBatch = 8, kStepDelayMs = 100;
inline constexpr int kDisturbAtStep = 12;
// The workers' collective and rebuild timeout (--timeout-ms): how long a stalled peer goes unnoticed.
inline constexpr int kCollectiveTimeoutMs = 8000;
inline const std::string kJob = "train";

inline std::vector<std::string> TrainFlags() {
  return {"--steps",      std::to_string(kSteps),
          "--samples",    std::to_string(kSamples),
          "--batch",      std::to_string(kBatch),
          "--seed",       "7",
          "--timeout-ms", std::to_string(kCollectiveTimeoutMs)};
}

// What the job's workers run and how to check it: the C++ example trainer, or the PyTorch example.
struct Workload {
  std::vector<std::string> command;                      // the container's command (in the worker image)
  std::vector<std::string> args;                         // its args (the pacing flag added by ApplyJob)
  std::vector<std::string> reference;                    // the same training as one process, under ringmaster-run
  std::vector<std::pair<std::string, std::string>> env;  // extra container env
  size_t weights = 0;                                    // values in weights.txt
  int epochs = 0, samples = 0;
  int64_t final_step = 0;  // committed steps at the end (ResolveJournals)
  int disturb_at_step = kDisturbAtStep;
  int workers = 3;                         // the job's desired workers: its first membership's world
  std::chrono::seconds start_timeout{45};  // from the first membership to disturb_at_step
};

inline Workload TrainExample(const std::string& out) {
  Workload w;
  w.command = {"ringmaster-train-example"};
  w.args = TrainFlags();
  w.args.insert(w.args.end(), {"--step-delay-ms", std::to_string(kStepDelayMs), "--out", out});
  w.reference = {std::string(RINGMASTER_BIN_DIR) + "/ringmaster-train-example"};
  for (const auto& f : TrainFlags()) w.reference.push_back(f);
  w.env = {{std::string(api::env::kBackend), "gloo"}};
  w.weights = 8;
  w.epochs = kSteps * kBatch / kSamples;
  w.samples = kSamples;
  w.final_step = kSteps;
  return w;
}

// The ringmaster package's digits MLP (1,797 samples, global batch 64, 2 epochs): 58 training steps plus
// the initial state's commit. `example`: digits_horovod_elastic.py (Horovod's API) or digits_ddp_elastic.py
// (DDP on the "ringmaster" backend); both compute the same weights. `examples`: where the workers find the
// examples (ExamplesDir()).
inline Workload PyTorchExample(const std::string& out, const std::string& examples, const std::string& example) {
  const std::string script = examples + "/" + example;
  const std::string reference =
      std::string(RINGMASTER_SOURCE_DIR) + "/worker-runtime/python/examples/digits_horovod_elastic.py";
  Workload w;
  w.command = {"python", script};
  w.args = {"--epochs", "2", "--step-delay-ms", "150"};
  w.reference = {RINGMASTER_PYTHON, reference, "--epochs", "2"};
  w.env = {{std::string(api::env::kBackend), "gloo"}, {std::string(api::env::kOut), out}};
  w.weights = 64 * 32 + 32 + 32 * 10 + 10;
  w.epochs = 2;
  w.samples = 1797;
  w.final_step = std::numeric_limits<int64_t>::max();
  w.disturb_at_step = 8;
  return w;
}

// The integer in environment variable `name`, or `fallback` when it is unset or empty (the long programs' knobs).
inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

class ElasticWorkersE2eTest : public JobTest {
 protected:
  using json = nlohmann::json;
  using seconds = std::chrono::seconds;

  ElasticWorkersE2eTest() : JobTest("workers") {}

  void SetUp() override {
    JobTest::SetUp();
    out_ = ::testing::TempDir() + "elastic-workers-" + ns_;
    std::filesystem::remove_all(out_);
    std::filesystem::create_directories(out_ + "/train");
    workload_ = TrainExample(WorkersOut());
    ASSERT_NO_FATAL_FAILURE(PlaceOnRealNodes());
    StartOperator();
    if (HasFatalFailure()) return;
    auto pods = PodHistory::Watch(cluster_.kubeconfig(), ns_, kJob);
    ASSERT_OK(pods) << pods.status();
    pods_ = std::move(pods).value();
  }

  // The pods on the real nodes, from the worker image; the workers' output directory (out_/train) a hostPath at
  // /out that the image's user (1000) may write. Adds the pod's volumes: and the container's volumeMounts:.
  void PlaceOnRealNodes() {
    auto image = RegistryImage(cluster_, "ringmaster-worker", RINGMASTER_IMAGE_TAG);
    ASSERT_OK(image) << image.status();
    image_ = *image;
    placement_ = RealNodePlacement(6);
    std::filesystem::permissions(out_ + "/train", std::filesystem::perms::all);
    pod_extra_ += "      volumes: [{name: out, hostPath: {path: " + out_ + "/train, type: Directory}}]\n";
    container_extra_ += "        volumeMounts: [{name: out, mountPath: /out}]\n";
  }

  // Where the workers write their journals and weights (out_/train as they see it).
  std::string WorkersOut() const { return "/out"; }
  // Where the workers find the PyTorch examples in the worker image.
  std::string ExamplesDir() const { return "/opt/ringmaster/examples/python"; }

  // The operator as a process of the test (a subclass may run it otherwise).
  virtual void StartOperator() {
    Status started = StartOperatorProcess(&operator_, RINGMASTER_OPERATOR_BIN, cluster_, ns_, out_ + "/operator.log",
                                          operator_args_);
    ASSERT_OK(started) << started;
  }

  void TearDown() override {
    if (HasFailure()) {
      auto pods = cluster_.Kubectl({"describe", "pods", "-n", ns_});
      if (pods.ok()) std::cerr << "---- the job's pods ----\n" << pods->out << "\n";
      for (const auto& [pod, log] : WorkerLogs()) std::cerr << "---- " << pod << " ----\n" << log << "\n";
      // The pods already deleted: how each that failed ended (its log's tail, as the kubelet kept it).
      for (const auto& p : pods_ ? pods_->Pods() : std::vector<WorkerPod>{}) {
        if (p.ended && p.exit_code != 0) {
          std::cerr << "---- " << p.pod << " (uid " << p.uid << ") exited " << p.exit_code << " (" << p.reason
                    << ") ----\n"
                    << p.message << "\n";
        }
      }
    }
    if (HasFailure()) {
      std::cerr << "---- operator log ----\n" << operator_.Log() << "\n";
      auto job = cluster_.Kubectl({"get", "tj", kJob, "-n", ns_, "-o", "yaml"});
      if (job.ok()) std::cerr << "---- the job ----\n" << job->out << "\n";
    }
    operator_.Stop(seconds(5));
    pods_.reset();
    ClusterTest::TearDown();
    if (!HasFailure()) std::filesystem::remove_all(out_);  // kept for a person to read when it failed
  }

  // The job: min min_workers_ (2 unless set), desired workload_.workers (3 unless set), max 4 CPU workers
  // (gpus_ fake GPUs each: one unless set, so one per node), placed by placement_ (this test's nodes unless set),
  // running workload_ with the Kubernetes membership source.
  void ApplyJob() {
    auto list = [](const std::vector<std::string>& items) {
      std::string out;
      for (const auto& f : items) out += (out.empty() ? "" : ", ") + json(f).dump();
      return "[" + out + "]";
    };
    std::string env;
    for (const auto& [name, value] : workload_.env)
      env += (env.empty() ? "" : ", ") + std::string("{name: ") + name + ", value: " + json(value).dump() + "}";
    Status s = cluster_.Apply(
        ringmaster::testing::TrainingJobHead() + "metadata: {name: " + kJob + ", namespace: " + ns_ +
        (labels_.empty() ? "" : ", labels: {" + labels_ + "}") + "}\nspec:\n  replicas: {min: " +
        std::to_string(min_workers_) + ", max: 4, desired: " + std::to_string(workload_.workers) +
        (spares_ > 0 ? ", spares: " + std::to_string(spares_) : std::string()) + "}\n" +
        (processes_per_pod_ > 1 ? "  processesPerPod: " + std::to_string(processes_per_pod_) + "\n" : "") +
        spec_extra_ +
        "  elasticPolicy: {joinBatchWindowSeconds: 1, nodeUnresponsiveSeconds: 2, forceDeleteGraceSeconds: 5, "
        "leaveGraceSeconds: 30, maxRestarts: " +
        std::to_string(max_restarts_) +
        "}\n"
        "  template:\n" +
        "    spec:\n" + placement_ + pod_extra_ + "      containers:\n      - name: trainer\n        image: " + image_ +
        "\n"
        "        command: " +
        list(workload_.command) + "\n        args: " + list(workload_.args) +
        "\n"
        "        env: [" +
        env + (env.empty() || env_extra_.empty() ? "" : ", ") + env_extra_ + "]\n" + container_extra_ +
        "        resources: {limits: {nvidia.com/gpu: " + std::to_string(gpus_) + "}}\n");
    ASSERT_OK(s) << s;
  }

  json Job() {
    auto j = cluster_.KubectlJson({"get", "tj", kJob, "-n", ns_});
    return j.ok() ? *j : json::object();
  }
  static json Membership(const json& job) {
    return job.value("status", json::object()).value("membership", json::object());
  }
  static std::string Phase(const json& job) { return job.value("status", json::object()).value("phase", ""); }

  json WaitForJob(const std::string& what, seconds timeout, const std::function<bool(const json&)>& pred) {
    json job;
    Status s = WaitFor(what, timeout, [&](std::string* last) {
      job = Job();
      *last = job.value("status", json::object()).dump();
      return pred(job);
    });
    EXPECT_OK(s) << s;
    return job;
  }

  // Makes the workload train `minutes` at full pace (kStepDelayMs a step, at least 600 steps), a multiple of 6 steps:
  // whole epochs of 48 samples in batches of 8. For the programs that run long (make soak, make bench-goodput).
  void TrainFor(int minutes) {
    const int steps = std::max(600, minutes * 60 * 1000 / kStepDelayMs / 6 * 6);
    *(std::find(workload_.args.begin(), workload_.args.end(), "--steps") + 1) = std::to_string(steps);
    *(std::find(workload_.reference.begin(), workload_.reference.end(), "--steps") + 1) = std::to_string(steps);
    workload_.final_step = steps;
    workload_.epochs = steps * kBatch / kSamples;
    workload_.start_timeout = seconds(60);
  }

  // The highest step any worker has journaled (the training's progress).
  int64_t Progress() {
    int64_t best = -1;
    for (const auto& e : std::filesystem::directory_iterator(out_ + "/train")) {
      if (e.path().filename().string().rfind("journal.", 0) != 0) continue;
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string kind;
        int64_t generation = 0, step = -1;
        if (fields >> kind >> generation >> step && kind == "A") best = std::max(best, step);
      }
    }
    return best;
  }

  // Waits until the job trains (its first generation of workload_.workers pods is published and the workers pass
  // its disturb_at_step); returns the job as then seen.
  // Whether a worker's log says it built `generation` or a later one (the runtime's "generation N ready" line).
  static bool BuiltGeneration(const std::string& log, int64_t generation) {
    static const std::regex ready("generation ([0-9]+) ready");
    for (std::sregex_iterator it(log.begin(), log.end(), ready), end; it != end; ++it) {
      if (std::stoll((*it)[1].str()) >= generation) return true;
    }
    return false;
  }

  json WaitUntilTraining() {
    const int ranks = workload_.workers * processes_per_pod_;
    // (Its workers become Ready once they have started: as slow as the start itself when they import torch.)
    json job = WaitForJob("the first membership of " + std::to_string(ranks) + " ranks",
                          std::max<seconds>(seconds(60), workload_.start_timeout),
                          [&](const json& j) { return Membership(j).value("worldSize", 0) == ranks; });
    // Every member has built that generation before a test disturbs it. A worker whose pod was slow to start
    // joins the world after the others trained past `disturb_at_step`; disturbed while its generation is
    // still being built, the test would exercise a different race than the one it claims.
    const json m = Membership(job);
    const int64_t generation = m.value("generation", int64_t{0});
    std::set<std::string> members;
    for (const auto& member : m["members"]) members.insert(member.value("pod", ""));
    Status built = WaitFor("every member to build generation " + std::to_string(generation), workload_.start_timeout,
                           [&](std::string* last) {
                             for (const std::string& pod : members) {
                               auto log = cluster_.Kubectl({"logs", pod, "-n", ns_});
                               if (!log.ok() || !BuiltGeneration(log->out, generation)) {
                                 *last = pod + " has not logged 'generation " + std::to_string(generation) + " ready'";
                                 return false;
                               }
                             }
                             return true;
                           });
    EXPECT_OK(built) << built;
    const int64_t at = workload_.disturb_at_step;
    Status s =
        WaitFor("the workers to reach step " + std::to_string(at), workload_.start_timeout, [&](std::string* last) {
          int64_t p = Progress();
          *last = "step " + std::to_string(p);
          return p >= at;
        });
    EXPECT_OK(s) << s;
    return Job();
  }

  // A one-process run of the same training (the pacing flag does not change the arithmetic). Its worker's
  // first heartbeat comes after `import torch`, which took over 30 s on a loaded machine: both heartbeat
  // timeouts are the whole deadline (one worker has no peer to free from a frozen one anyway).
  std::vector<double> Reference() {
    std::string out = out_ + "/reference";
    std::vector<std::string> argv = {std::string(RINGMASTER_BIN_DIR) + "/ringmaster-run",
                                     "--np",
                                     "1",
                                     "--out",
                                     out,
                                     "--deadline-s",
                                     "120",
                                     "--startup-timeout-s",
                                     "120",
                                     "--heartbeat-timeout-ms",
                                     "120000",
                                     "--"};
    argv.insert(argv.end(), workload_.reference.begin(), workload_.reference.end());
    auto r = RunCommand(argv, seconds(150));
    EXPECT_COMMAND_OK(r) << (r.ok() ? r->out + r->err : r.status().ToString());
    return ringmaster::runtime_testing::ReadWeights(out + "/weights.txt");
  }

  // The job succeeds; every finisher's weights equal the reference; each epoch's samples are committed
  // exactly once. Returns the pods whose workers wrote final weights.
  std::set<std::string> ExpectSucceededWithExactResults() {
    json done = WaitForJob("the job to succeed", seconds(60),
                           [](const json& j) { return Phase(j) == "Succeeded" || Phase(j) == "Failed"; });
    EXPECT_EQ(Phase(done), "Succeeded") << done.value("status", json::object()).dump(2);

    const std::vector<double> ref = Reference();
    EXPECT_EQ(ref.size(), workload_.weights) << "the one-process reference run wrote no weights";
    std::set<std::string> finishers;
    std::vector<std::string> journals;
    for (const auto& e : std::filesystem::directory_iterator(out_ + "/train")) {
      std::string name = e.path().filename().string();
      if (name.rfind("journal.", 0) == 0) journals.push_back(e.path().string());
      if (name.rfind("weights.", 0) != 0 || name.size() < 4 || name.substr(name.size() - 4) != ".txt") continue;
      std::string pod = name.substr(8, name.size() - 12);
      finishers.insert(pod);
      std::vector<double> got = ringmaster::runtime_testing::ReadWeights(e.path().string());
      EXPECT_EQ(got.size(), ref.size()) << name;
      for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
        EXPECT_LE(std::abs(got[i] - ref[i]), 1e-9 * std::abs(ref[i]))
            << name << " weight " << i << ": " << got[i] << " vs " << ref[i];
      }
    }
    EXPECT_GE(finishers.size(), 2u) << "fewer than min workers wrote final weights";

    auto resolved = elastic::ResolveJournals(journals, workload_.final_step);
    EXPECT_OK(resolved) << resolved.status();
    if (resolved.ok()) {
      std::map<uint64_t, std::multiset<uint64_t>> by_epoch;
      for (const auto& s : *resolved) by_epoch[s.epoch].insert(s.sample);
      EXPECT_EQ(by_epoch.size(), static_cast<size_t>(workload_.epochs));
      for (const auto& [epoch, ids] : by_epoch) {
        EXPECT_EQ(ids.size(), static_cast<size_t>(workload_.samples)) << "epoch " << epoch;
        uint64_t expect = 0;
        for (uint64_t id : ids) EXPECT_EQ(id, expect++) << "epoch " << epoch << ": a sample missing or repeated";
      }
    }
    return finishers;
  }

  // The pods named `pod` (a deleted pod's replacement may take its name; a failed one is kept under its own), in
  // start order, as the kubelets reported them.
  std::vector<WorkerPod> ProcessesOf(const std::string& pod) { return pods_->Named(pod); }

  // Waits until pod `pod` with `uid` is gone from the apiserver (no pod of that name, or another uid under it).
  Status WaitForPodGone(const std::string& pod, const std::string& uid, seconds timeout) {
    return WaitFor("pod " + pod + " (uid " + uid + ") to be deleted", timeout, [&](std::string* last) {
      auto now =
          cluster_.Kubectl({"get", "pod", pod, "-n", ns_, "--ignore-not-found", "-o", "jsonpath={.metadata.uid}"});
      *last = now.ok() ? "uid '" + now->out + "'" : now.status().ToString();
      return now.ok() && now->ok() && now->out != uid;
    });
  }

  // What `pod` printed (`kubectl logs`); "" once its pod is deleted.
  std::string LogOf(const std::string& pod) {
    auto log = cluster_.Kubectl({"logs", pod, "-n", ns_});
    return log.ok() ? log->out : "";
  }

  // How many local steps `pod`'s worker rolled back at its first rebuild after generation `after`, from its log
  // line "generation G ready: ... (N local steps rolled back)" with G > after (a world below the minimum pauses
  // without one); waits up to 20 s for the line; -1 without it.
  int64_t StepsRolledBackAfter(const std::string& pod, int64_t after) {
    int64_t rolled = -1;
    Status s = WaitFor(pod + "'s rebuild after generation " + std::to_string(after), seconds(20), [&](std::string*) {
      std::istringstream log(LogOf(pod));
      for (std::string line; std::getline(log, line);) {
        const size_t at = line.find("] generation ");
        const size_t tail = line.find(" local steps rolled back)");
        if (at == std::string::npos || tail == std::string::npos || line.find(" ready: ") == std::string::npos)
          continue;
        if (std::atoll(line.c_str() + at + 13) <= after) continue;
        rolled = std::atoll(line.c_str() + line.rfind('(', tail) + 1);
        return true;
      }
      return false;
    });
    EXPECT_OK(s) << s;
    return rolled;
  }

  // Evicts `pod` through the Eviction API (POST pods/<pod>/eviction, what a drain does): the control plane marks it
  // DisruptionTarget and deletes it with its grace period.
  void EvictPod(const std::string& pod) {
    const std::string eviction = out_ + "/eviction-" + pod + ".json";
    std::ofstream(eviction) << json{{"apiVersion", "policy/v1"},
                                    {"kind", "Eviction"},
                                    {"metadata", {{"name", pod}, {"namespace", ns_}}}}
                                   .dump();
    auto evicted = cluster_.Kubectl(
        {"create", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/" + pod + "/eviction", "-f", eviction});
    ASSERT_COMMAND_OK(evicted) << (evicted.ok() ? evicted->err : "");
  }

  // Waits up to `timeout` for the container of `pod`'s first incarnation to end; its exit code, -1 if it did not.
  int WaitForExit(const std::string& pod, seconds timeout) {
    Status exited = WaitFor(pod + " to exit", timeout, [&](std::string* last) {
      auto procs = ProcessesOf(pod);
      *last = procs.empty() ? "no pod" : (procs[0].ended ? "exit " + std::to_string(procs[0].exit_code) : "running");
      return !procs.empty() && procs[0].ended;
    });
    EXPECT_OK(exited) << exited;
    return exited.ok() ? ProcessesOf(pod)[0].exit_code : -1;
  }

  // SIGKILLs `pod`'s worker (its container's PID 1) through its node's containerd.
  void KillWorker(const std::string& pod) {
    Status killed = SignalContainer(cluster_, ns_, pod, SIGKILL);
    ASSERT_OK(killed) << pod << ": " << killed;
  }

  // A kubeconfig (written under out_) that authenticates as `pod` does: the service-account token the kubelet
  // projected into its container (read with `kubectl exec`), against this cluster's apiserver. "" (with a test
  // failure) when the token cannot be read.
  std::string PodKubeconfig(const std::string& pod) {
    auto token =
        cluster_.Kubectl({"exec", pod, "-n", ns_, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"});
    EXPECT_COMMAND_OK(token) << (token.ok() ? token->err : "");
    auto admin = cluster_.Kubectl({"config", "view", "--raw", "--minify", "-o", "json"});
    EXPECT_COMMAND_OK(admin) << (admin.ok() ? admin->err : "");
    if (!token.ok() || !token->ok() || token->out.empty() || !admin.ok() || !admin->ok()) return "";
    json cluster = json::parse(admin->out)["clusters"][0]["cluster"];
    const std::string path = out_ + "/kubeconfig." + pod;
    std::ofstream(path) << json{{"apiVersion", "v1"},
                                {"kind", "Config"},
                                {"clusters", {{{"name", "c"}, {"cluster", cluster}}}},
                                {"users", {{{"name", "u"}, {"user", {{"token", token->out}}}}}},
                                {"contexts", {{{"name", "c"}, {"context", {{"cluster", "c"}, {"user", "u"}}}}}},
                                {"current-context", "c"}}
                               .dump();
    return path;
  }

  // What the worker pods of the job printed, by pod (`kubectl logs`). Pods already deleted are missing.
  std::map<std::string, std::string> WorkerLogs() {
    std::map<std::string, std::string> logs;
    auto pods = cluster_.KubectlJson({"get", "pods", "-n", ns_, "-l", std::string(api::kJobNameLabel) + "=" + kJob});
    if (!pods.ok()) return logs;
    for (const auto& p : (*pods)["items"]) {
      const std::string name = p["metadata"].value("name", "");
      auto log = cluster_.Kubectl({"logs", name, "-n", ns_});
      if (log.ok()) logs[name] = log->out;
    }
    return logs;
  }

  // Waits until the operator has recorded a membership change for `reason` to a world of `world`
  // workers (the Event it records on the job for every generation; a generation can be superseded
  // faster than the job could be polled). Returns the event's message.
  std::string WaitForMembershipEvent(const std::string& reason, int world) {
    return WaitForMembershipEvent(std::set<std::string>{reason}, world);
  }
  // The same for any of `reasons`: a killed worker whose pod's readiness is probed leaves as
  // WorkerRemoved (not ready) before its exit is reported (WorkerFailed); either is the change.
  std::string WaitForMembershipEvent(const std::set<std::string>& reasons, int world) {
    std::string found, wanted;
    for (const auto& r : reasons) wanted += (wanted.empty() ? "" : " or ") + r;
    Status s = WaitFor("a " + wanted + " membership change to world size " + std::to_string(world), seconds(30),
                       [&](std::string* last) {
                         auto events =
                             cluster_.KubectlJson({"get", "events", "-n", ns_, "--field-selector",
                                                   "involvedObject.kind=TrainingJob,involvedObject.name=" + kJob});
                         if (!events.ok()) {
                           *last = events.status().ToString();
                           return false;
                         }
                         for (const auto& e : (*events)["items"]) {
                           if (reasons.count(e.value("reason", "")) == 0) continue;
                           std::string message = e.value("message", "");
                           *last = message;
                           if (message.find("world size " + std::to_string(world) + " ") != std::string::npos)
                             found = message;
                         }
                         return !found.empty();
                       });
    EXPECT_OK(s) << s;
    return found;
  }

  std::string out_;
  Workload workload_;
  // The job beyond the workload: YAML lines under spec: (indented 2, e.g. its checkpoint), the pod
  // template's image (the worker image in the cluster's registry), and YAML lines under the pod spec (indented 6)
  // and under the container (indented 8).
  std::string spec_extra_;
  std::string labels_;  // the job's labels, "key: value, ..." (e.g. a Kueue queue's)
  std::string image_;
  std::string pod_extra_, container_extra_;
  std::string env_extra_;                   // more items of the container's env list, as YAML flow (a valueFrom, say)
  std::string placement_;                   // the pod spec's placement (indented 6): the real nodes
  int max_restarts_ = 10;                   // spec.elasticPolicy.maxRestarts (the API's default)
  int min_workers_ = 2;                     // spec.replicas.min
  int spares_ = 0;                          // spec.replicas.spares (written only when above 0)
  int gpus_ = 1;                            // the trainer's nvidia.com/gpu limit (emulated GPUs of the device plugin)
  int processes_per_pod_ = 1;               // spec.processesPerPod (written only when above 1)
  std::vector<std::string> operator_args_;  // more flags for the operator process (set before SetUp)
  BackgroundProcess operator_;
  std::unique_ptr<PodHistory> pods_;  // the job's pods as the kubelets reported them
};

}  // namespace ringmaster::testing
