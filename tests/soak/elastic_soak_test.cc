// make soak: minutes of random faults against one elastic job on a local cluster of its own, then the
// same end as every e2e test — the job Succeeded, every finisher's weights equal a one-process run
// (float64, 1e-9 relative), every sample committed once per epoch — and a table of the faults it survived.
// A benchmark-like program, not part of make test. RINGMASTER_SOAK_MINUTES (30) sets the training's length
// at full pace (100 ms a step); faults come until its last 300 steps, so stalls and load lengthen the soak.
//
// The job is elastic_workers_fixture.h's (ringmaster-train-example workers from the worker image on the
// cluster's real nodes, run by their kubelets on containerd; min 2, max 4) under two operator replicas with
// leader election, long enough to outlast the soak. The cluster needs real nodes and the images pushed to
// its registry (ctest's fixture real_node_images: cluster.sh push). Between faults the soak waits until the
// job is settled (its membership has the desired world), then a random 2-6 s, then draws one fault
// (RINGMASTER_SOAK_SEED, else the clock, printed):
//   kill      a member SIGKILLed through its node's containerd (its pod fails; a replacement comes after the
//             back-off)
//   stop      a member SIGSTOPped for 1-5 s through its node's containerd, then SIGCONT (its peers time out
//             and rebuild the generation)
//   scale     kubectl scale to another size in [2, 4]
//   operator  the leading operator SIGKILLed; the standby takes over; the dead one restarts as standby
//   apiserver kube-apiserver restarted
//   partition a member cut off inside its pod's network namespace (support/real_nodes.h: iptables DROP), half
//             the time from its apiserver too, until a generation drops it (its peers report it), then healed
// Where real kubelets differ from the pod runner the soak used to run on KWOK's nodes:
//   * No node fault. A KWOK node's NotReady label made the runner kill its workers at once; a real kubelet
//     ignores it, and a real node is lost only after the node controller's grace (50 s) of a hung node --
//     lost_node_e2e_test freezes one, alone (ctest SERIAL), as it stalls every pod on a shared node.
//   * A cut pod's kubelet still hears the apiserver: when the operator deletes the dropped pod, its kubelet
//     kills the stale worker while the cut lasts, and the cut goes with the pod's network namespace. The heal
//     then finds no cut pod of that name (NotFound, or a replacement of the same name that was never cut):
//     both count as healed.
// Partitions need root (nsenter and iptables in the pod's network namespace), as the e2e tests do.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/replicated_operator_fixture.h"
#include "tests/support/real_nodes.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class ElasticSoakTest : public ReplicatedOperatorWorkersTest {
 protected:
  void SetUp() override {
    minutes_ = EnvInt("RINGMASTER_SOAK_MINUTES", 30);
    max_restarts_ = 100000;  // every kill is a failure: the default 10 would end the job within minutes
    ReplicatedOperatorWorkersTest::SetUp();
    // Pure training time is the soak's length; the faults' stalls come on top.
    TrainFor(minutes_);
    steps_ = static_cast<int>(workload_.final_step);
  }

  void Say(const std::string& line) {
    const double t = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "[soak %3d:%02d] %s\n", static_cast<int>(t) / 60, static_cast<int>(t) % 60, line.c_str());
  }

  // Waits until the membership has the desired world, without the incarnation `gone_uid` (a killed worker: until
  // the operator has seen its exit, the world still looks whole and the kill would read as settled at once, its
  // recovery counted against the next fault); false (with a failure) after 150 s.
  bool Settle(const std::string& gone_uid = "") {
    Status s = WaitFor("the job to settle", seconds(150), [&](std::string* last) {
      json j = Job();
      const int desired = j.value("spec", json::object()).value("replicas", json::object()).value("desired", 0);
      const int world = Membership(j).value("worldSize", 0);
      *last = "world " + std::to_string(world) + " of " + std::to_string(desired) + ", phase " + Phase(j);
      for (const auto& m : Membership(j).value("members", json::array()))
        if (!gone_uid.empty() && m.value("uid", "") == gone_uid) return false;
      // Finished: a Failed job is reported below; a Succeeded one ends the faults (the training ran out
      // while the last fault settled, e.g. a replacement held back by its backoff).
      if (Phase(j) == "Failed" || Phase(j) == "Succeeded") return true;
      return desired > 0 && world == desired;
    });
    if (s.ok() && Phase(Job()) == "Failed") s = AbortedError("the job Failed: " + Job()["status"].dump());
    EXPECT_OK(s) << s;
    return s.ok();
  }

  template <typename T>
  T Pick(const std::vector<T>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng_)];
  }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Draws and injects one fault; returns its kind and a description.
  std::pair<std::string, std::string> InjectOne() {
    const json job = Job();
    // Members whose process runs: a worker killed moments ago can still be in the membership (the operator
    // has not seen its exit yet, so the settle check passed at once), and cannot be stopped or cut.
    std::vector<json> members;
    for (const auto& m : Membership(job).value("members", json::array())) {
      bool runs = false;
      for (const auto& p : ProcessesOf(m.value("pod", ""))) runs |= p.uid == m.value("uid", "") && p.running;
      if (runs) members.push_back(m);
    }
    std::string kind = Pick<std::string>({"kill", "stop", "scale", "operator", "apiserver", "partition"});
    if (members.empty() && kind != "operator" && kind != "apiserver") kind = "scale";  // no member to hit
    if (kind == "kill" || kind == "stop" || kind == "partition") {
      const json victim = Pick(members);
      const std::string pod = victim.value("pod", "");
      if (kind == "partition") {
        const bool control_plane_too = Uniform(0, 1) == 1;
        const std::string uid = victim.value("uid", "");
        const auto cut_at = Clock::now();
        Status cut = PartitionPod(cluster_, ns_, pod, control_plane_too);
        EXPECT_OK(cut) << pod << ": " << cut;
        if (!cut.ok()) return {kind, "could not cut " + pod};
        Status dropped = WaitFor("a generation without " + pod, seconds(90), [&](std::string*) {
          for (const auto& m : Membership(Job()).value("members", json::array()))
            if (m.value("uid", "") == uid) return false;
          return true;
        });
        EXPECT_OK(dropped) << dropped;
        const double took = std::chrono::duration<double>(Clock::now() - cut_at).count();
        partition_to_generation_.push_back(took);
        const std::string healed = Heal(pod, uid);
        char text[256];
        std::snprintf(text, sizeof text, "cut %s%s; dropped after %.1f s; %s", pod.c_str(),
                      control_plane_too ? " and its apiserver" : "", took, healed.c_str());
        return {kind, text};
      }
      if (kind == "kill") {
        KillWorker(pod);
        killed_uid_ = victim.value("uid", "");
        return {kind, "SIGKILL " + pod};
      }
      if (kind == "stop") {
        const int ms = Uniform(1000, 5000);
        Status stopped = SignalContainer(cluster_, ns_, pod, SIGSTOP);
        EXPECT_OK(stopped) << pod << ": " << stopped;
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        // Thawed even when the stop seemed to fail: a frozen worker left behind would stall the job for good.
        Status continued = SignalContainer(cluster_, ns_, pod, SIGCONT);
        EXPECT_OK(continued) << pod << ": " << continued;
        return {kind, "SIGSTOP " + pod + " for " + std::to_string(ms) + " ms"};
      }
    }
    if (kind == "scale") {
      const int desired = job["spec"]["replicas"].value("desired", 3);
      int to = desired;
      while (to == desired) to = Uniform(2, 4);
      EXPECT_COMMAND_OK(cluster_.Kubectl({"scale", "-n", ns_, "tj/" + kJob, "--replicas=" + std::to_string(to)}));
      return {kind, "scale " + std::to_string(desired) + " -> " + std::to_string(to)};
    }
    if (kind == "operator") {
      auto took = replicas_.KillLeader();
      EXPECT_OK(took) << took.status();
      EXPECT_OK(replicas_.Restart());
      char text[96];
      std::snprintf(text, sizeof text, "leader SIGKILLed, the standby took over in %.1f s", took.ok() ? *took : -1.0);
      return {kind, text};
    }
    auto restarted = RunCommand({std::string(RINGMASTER_SOURCE_DIR) + "/tests/harness/cluster/cluster.sh", "restart",
                                 "--dir", cluster_.dir(), "kube-apiserver"},
                                seconds(150));
    EXPECT_COMMAND_OK(restarted);
    return {kind, "kube-apiserver restarted"};
  }

  // Undoes the partition of pod `pod` (its incarnation `uid`); says how it ended. On a real node the operator's
  // deletion of the dropped pod reaches its kubelet, which kills the stale worker while the cut lasts: the cut
  // then went with the pod's network namespace. HealPod says NotFound when no pod of that name runs, and
  // FailedPrecondition when its replacement (the same name, a new uid) runs, never cut; both mean healed.
  std::string Heal(const std::string& pod, const std::string& uid) {
    Status healed = HealPod(cluster_, ns_, pod);
    if (healed.ok()) return "healed";
    if (healed.code() == StatusCode::kNotFound) return "healed (its pod was gone, the cut with it)";
    if (healed.code() == StatusCode::kFailedPrecondition) {
      auto now =
          cluster_.Kubectl({"get", "pod", pod, "-n", ns_, "--ignore-not-found", "-o", "jsonpath={.metadata.uid}"});
      if (now.ok() && now->ok() && now->out != uid) return "healed (a replacement of the same name runs, never cut)";
    }
    ADD_FAILURE() << "healing " << pod << " (uid " << uid << "): " << healed;
    return "not healed: " + healed.ToString();
  }

  int minutes_ = 30, steps_ = 0;
  std::string killed_uid_;  // the last fault's SIGKILLed incarnation, until the world is whole without it
  std::vector<double> partition_to_generation_;  // seconds from each cut to a generation without the victim
  Clock::time_point start_ = Clock::now();
  std::mt19937_64 rng_;
};

TEST_F(ElasticSoakTest, RandomFaultsThenTheExactResult) {
  const uint64_t seed =
      static_cast<uint64_t>(EnvInt("RINGMASTER_SOAK_SEED", static_cast<int>(::time(nullptr) % 100000)));
  rng_.seed(seed);
  start_ = Clock::now();
  Say("soak: " + std::to_string(minutes_) + " min of faults, seed " + std::to_string(seed) +
      " (RINGMASTER_SOAK_SEED), " + std::to_string(steps_) + " training steps");
  ApplyJob();
  WaitUntilTraining();
  ASSERT_FALSE(HasFailure());

  std::map<std::string, int> survived;
  std::map<std::string, double> settle_seconds;
  // Faults until the last 300 steps: the training's length, not a clock, ends the soak (a loaded machine
  // or long stalls stretch it; a hard cap of four times the length ends it anyway).
  const auto cap = start_ + 4 * std::chrono::minutes(minutes_);
  int n = 0;
  while (Clock::now() < cap && Progress() < steps_ - 300) {
    if (!Settle() || Phase(Job()) == "Succeeded") break;
    auto restarted = replicas_.RestartExited();
    ASSERT_OK(restarted) << restarted.status();
    for (const auto& name : *restarted)
      Say(name + " had exited (it lost its lease); started again, as its Deployment would");
    std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(2000, 6000)));
    const int64_t generation = Membership(Job()).value("generation", int64_t{0});
    killed_uid_.clear();
    auto [kind, what] = InjectOne();
    if (HasFailure()) break;
    const auto injected = Clock::now();
    if (!Settle(killed_uid_)) break;
    const double took = std::chrono::duration<double>(Clock::now() - injected).count();
    ++survived[kind];
    settle_seconds[kind] += took;
    char line[256];
    std::snprintf(line, sizeof line, "fault %d: %-9s %s (generation %lld -> %lld, settled in %.1f s, step %lld of %d)",
                  ++n, kind.c_str(), what.c_str(), static_cast<long long>(generation),
                  static_cast<long long>(Membership(Job()).value("generation", int64_t{0})), took,
                  static_cast<long long>(Progress()), steps_);
    Say(line);
  }
  ASSERT_FALSE(HasFailure());
  Say("faults stop; the training runs to its end (step " + std::to_string(Progress()) + " of " +
      std::to_string(steps_) + ")");
  Status finished = WaitFor(
      "the training to end",
      seconds(120) + std::chrono::milliseconds(40 * kStepDelayMs) * std::max<int64_t>(0, steps_ - Progress()) / 10,
      [&](std::string* last) {
        *last = "phase " + Phase(Job()) + ", step " + std::to_string(Progress());
        return Phase(Job()) == "Succeeded" || Phase(Job()) == "Failed";
      });
  ASSERT_OK(finished) << finished;
  std::set<std::string> finishers = ExpectSucceededWithExactResults();
  EXPECT_TRUE(history_->Problems().empty()) << history_->Problems().front() << "\n" << history_->Describe();

  std::fprintf(stderr, "\nsoak: %d faults in %.1f min, seed %llu; the job %s with %zu finishers%s\n", n,
               std::chrono::duration<double>(Clock::now() - start_).count() / 60, static_cast<unsigned long long>(seed),
               Phase(Job()).c_str(), finishers.size(),
               HasFailure() ? " -- FAILED (see above)" : ", weights exact, every sample once per epoch");
  std::fprintf(stderr, "  %-10s %9s %20s\n", "fault", "survived", "mean time to settle");
  for (const auto& [kind, count] : survived) {
    std::fprintf(stderr, "  %-10s %9d %18.1f s\n", kind.c_str(), count, settle_seconds[kind] / count);
  }
  if (!partition_to_generation_.empty()) {
    std::vector<double> t = partition_to_generation_;
    std::sort(t.begin(), t.end());
    std::fprintf(stderr,
                 "  partition -> generation without the cut worker, %zu cuts: median %.1f s, p99 %.1f s, max %.1f s "
                 "(collective timeout %.1f s)\n",
                 t.size(), t[t.size() / 2], t[std::min(t.size() - 1, t.size() * 99 / 100)], t.back(),
                 kCollectiveTimeoutMs / 1000.0);
  }
}

}  // namespace
}  // namespace ringmaster::testing
