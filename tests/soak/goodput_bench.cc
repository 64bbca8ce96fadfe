// make bench-goodput: what failures cost an elastic job, as the operator accounts it (status.goodput,
// operator/controller/goodput.h). One job of ringmaster-train-example workers (elastic_workers_fixture.h: the worker
// image on the cluster's real nodes, min 2, desired 3) trains RINGMASTER_GOODPUT_MINUTES (10) at full pace while
// a random member is SIGKILLed every RINGMASTER_GOODPUT_KILL_SECONDS (120) -- once without a spare, once with one
// warm spare (spec.replicas.spares: 1). Each run ends as every e2e test does (Succeeded, weights equal a
// one-process run, every sample once per epoch) and prints its figures:
//   FIGURE goodput_ratio_spares<K> R         productive seconds / wall seconds (goodput.h's definition)
//   FIGURE goodput_lost_<phase>_s_spares<K>  seconds lost per phase (detect, reschedule, rebuild, restore, replay)
//   FIGURE goodput_last_recovery_s_spares<K> the last failure -> the job's next completed step
// A benchmark-like program, not part of make test: the figures depend on the machine's load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <thread>

#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class GoodputBench : public ElasticWorkersE2eTest {
 protected:
  void SetUp() override {
    minutes_ = EnvInt("RINGMASTER_GOODPUT_MINUTES", 10);
    kill_every_ = seconds(EnvInt("RINGMASTER_GOODPUT_KILL_SECONDS", 120));
    max_restarts_ = 1000;
    ElasticWorkersE2eTest::SetUp();
    TrainFor(minutes_);
  }

  void Say(const std::string& line) const {
    const double t = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "[goodput %3d:%02d] %s\n", static_cast<int>(t) / 60, static_cast<int>(t) % 60, line.c_str());
  }

  // Runs the job to its end, killing a random member every kill_every_, and prints its goodput.
  void Run(int spares) {
    spares_ = spares;
    ApplyJob();
    WaitUntilTraining();
    ASSERT_FALSE(HasFailure());
    start_ = Clock::now();
    std::mt19937 rng(static_cast<unsigned>(std::time(nullptr)));
    int kills = 0;
    auto next_kill = Clock::now() + kill_every_;
    while (true) {
      const json job = Job();
      if (Phase(job) == "Succeeded" || Phase(job) == "Failed") break;
      if (Clock::now() >= next_kill) {
        const json members = Membership(job).value("members", json::array());
        if (!members.empty()) {
          const std::string victim =
              members[std::uniform_int_distribution<size_t>(0, members.size() - 1)(rng)].value("pod", "");
          Say("kill " + victim + " (rank of " + std::to_string(members.size()) + ")");
          ASSERT_NO_FATAL_FAILURE(KillWorker(victim));
          ++kills;
        }
        next_kill += kill_every_;
      }
      const json goodput = job.value("status", json::object()).value("goodput", json::object());
      if (!goodput.empty()) Say("goodput so far " + goodput.dump());
      std::this_thread::sleep_for(seconds(10));
    }
    ExpectSucceededWithExactResults();
    const json goodput = Job()["status"].value("goodput", json::object());
    ASSERT_FALSE(goodput.empty()) << "the operator accounted no goodput: " << Job()["status"].dump();
    const std::string k = "spares" + std::to_string(spares);
    std::printf("FIGURE goodput_kills_%s %d\n", k.c_str(), kills);
    std::printf("FIGURE goodput_ratio_%s %.3f\n", k.c_str(), goodput.value("ratio", -1.0));
    std::printf("FIGURE goodput_wall_s_%s %.1f\n", k.c_str(), goodput.value("wallSeconds", -1.0));
    const json lost = goodput.value("lostSeconds", json::object());
    for (auto it = lost.begin(); it != lost.end(); ++it)
      std::printf("FIGURE goodput_lost_%s_s_%s %.2f\n", it.key().c_str(), k.c_str(), it->get<double>());
    std::printf("FIGURE goodput_failures_%s %lld\n", k.c_str(),
                static_cast<long long>(goodput.value("failures", int64_t{-1})));
    std::printf("FIGURE goodput_last_recovery_s_%s %.2f\n", k.c_str(), goodput.value("lastRecoverySeconds", -1.0));
  }

  int minutes_ = 10;
  seconds kill_every_{120};
  Clock::time_point start_ = Clock::now();
};

TEST_F(GoodputBench, KillEveryTwoMinutesWithoutSpares) { Run(0); }
TEST_F(GoodputBench, KillEveryTwoMinutesWithOneWarmSpare) { Run(1); }

}  // namespace
}  // namespace ringmaster::testing
